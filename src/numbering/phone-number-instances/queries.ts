/**
 * Reading a project's instances: Get, and List — newest first, deleted
 * instances hidden unless `include_deleted`; `prefix` (E.164, the `+`
 * optional) matches instances holding at least one number that starts with
 * it — for a range, any number of it.
 */
import { badField, notFound } from "../../api/errors.js";
import { projectName, type ResourceRef, resourceName } from "../../api/names.js";
import { type PageResult, readPage } from "../../api/pagination.js";
import type { NumberingStore } from "../store.js";
import { COLLECTION, type ListParams, type PhoneNumberInstance, RESOURCE_TYPE } from "./model.js";
import { toInstance } from "./records.js";

export async function getInstance(store: NumberingStore, ref: ResourceRef): Promise<PhoneNumberInstance> {
  const record = await store.instances.find(ref.projectId, ref.id);
  if (record === undefined) throw notFound(RESOURCE_TYPE, resourceName(COLLECTION, ref));
  return toInstance(record);
}

export async function listInstances(
  store: NumberingStore,
  projectId: string,
  params: ListParams,
): Promise<PageResult<PhoneNumberInstance>> {
  const prefix = params.prefix === "" || params.prefix === "+" ? "" : `+${params.prefix.replace(/^\+/, "")}`;
  if (prefix !== "" && !/^\+[0-9]{1,15}$/.test(prefix)) {
    throw badField("prefix", "must be the start of an E.164 number, for example +6125550", "prefix.format");
  }
  const filter = { prefix, includeDeleted: params.includeDeleted };
  const query = {
    method: "ListPhoneNumberInstances",
    parent: projectName(projectId),
    prefix,
    include_deleted: params.includeDeleted,
  };
  const result = await readPage(
    { pageSize: params.pageSize, pageToken: params.pageToken, query },
    async (after, limit) =>
      (await store.instances.list(projectId, filter, after, limit)).map((r) => ({
        record: r,
        createTime: r.instance.createTime,
        id: r.instance.id,
      })),
  );
  return { items: result.items.map((r) => toInstance(r.record)), nextPageToken: result.nextPageToken };
}
