/** The admin Projects service: proto <-> ProjectsDomain. */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type Project,
  ProjectSchema,
  type Projects,
  type SigningKey,
  SigningKeySchema,
} from "../../gen/switchboard/admin/v1/projects_pb.js";
import { parseParent } from "../api/names.js";
import type { ProjectRow } from "../db/schema/admin.js";
import type { ProjectsDomain } from "./projects.js";

export function projectToProto(row: ProjectRow): Project {
  return create(ProjectSchema, {
    name: `projects/${row.id}`,
    displayName: row.displayName,
    createTime: timestampFromDate(row.createTime),
  });
}

function signingKeyToProto(row: ProjectRow): SigningKey {
  return create(SigningKeySchema, {
    name: `projects/${row.id}/signingKey`,
    key: Buffer.from(row.signingKey, "base64"),
    createTime: timestampFromDate(row.signingKeyCreateTime),
  });
}

/** `projects/{id}/signingKey` -> id (the pattern was validated already). */
function projectOfKey(name: string): string {
  return parseParent(name.slice(0, -"/signingKey".length), "name");
}

export function projectsService(domain: ProjectsDomain): ServiceImpl<typeof Projects> {
  return {
    async createProject(req) {
      return projectToProto(await domain.create(req.projectId, req.project?.displayName ?? ""));
    },
    async getProject(req) {
      return projectToProto(await domain.get(parseParent(req.name, "name")));
    },
    async listProjects(req) {
      const page = await domain.list(req.pageSize, req.pageToken);
      return { projects: page.items.map(projectToProto), nextPageToken: page.nextPageToken };
    },
    async deleteProject(req) {
      return projectToProto(await domain.delete(parseParent(req.name, "name")));
    },
    async getSigningKey(req) {
      return signingKeyToProto(await domain.get(projectOfKey(req.name)));
    },
    async rotateSigningKey(req) {
      return signingKeyToProto(await domain.rotateSigningKey(projectOfKey(req.name)));
    },
  };
}
