/** A project's unsubscribers: filtered by phone, added by hand, removed. */
import { createConnectQueryKey, useInfiniteQuery, useMutation } from "@connectrpc/connect-query";
import { useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import {
  Unsubscriber_UnsubscribeMethod as Method,
  Unsubscribers as UnsubscribersService,
} from "../../../gen/enfonica/messaging/v1/unsubscribers_pb.js";
import { useSession } from "../app.js";
import { useCan } from "../kit/can.js";
import { ErrorBanner } from "../kit/errors.js";
import { enumName, time } from "../kit/format.js";
import { Field } from "../kit/page.js";
import { Table } from "../kit/table.js";

const E164 = /^\+[1-9][0-9]{1,14}$/;

export function Unsubscribers() {
  const { session } = useSession();
  const queryClient = useQueryClient();
  const canAdd = useCan(UnsubscribersService.method.createUnsubscriber, { parent: session.project });
  const [phone, setPhone] = useState("");
  const [added, setAdded] = useState("");
  const refresh = () =>
    queryClient.invalidateQueries({
      queryKey: createConnectQueryKey({ schema: UnsubscribersService, cardinality: undefined }),
    });
  const list = useInfiniteQuery(
    UnsubscribersService.method.listUnsubscribers,
    { parent: session.project, pageSize: 25, pageToken: "", phone: E164.test(phone) ? phone : "" },
    { pageParamKey: "pageToken", getNextPageParam: (l) => l.nextPageToken || undefined },
  );
  const create = useMutation(UnsubscribersService.method.createUnsubscriber, { onSuccess: refresh });
  const remove = useMutation(UnsubscribersService.method.deleteUnsubscriber, { onSuccess: refresh });
  const addedInvalid = added !== "" && !E164.test(added);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate({
      parent: session.project,
      unsubscriber: { phone: added, unsubscribeMethod: Method.MANUAL },
    });
  };
  const rows = list.data?.pages.flatMap((p) => p.unsubscribers) ?? [];
  return (
    <section aria-labelledby="unsubscribers-title">
      <h2 id="unsubscribers-title">Unsubscribers</h2>
      <div className="filters row">
        <Field label="Phone (E.164)" id="unsubscribers-phone">
          <input
            id="unsubscribers-phone"
            inputMode="tel"
            value={phone}
            onChange={(e) => setPhone(e.target.value)}
          />
        </Field>
      </div>
      {canAdd === true && (
        <form className="row" onSubmit={submit} aria-label="Add an unsubscriber">
          <Field
            label="Add a number"
            id="unsubscriber-add"
            hint={addedInvalid ? "A number in E.164, e.g. +61491570156." : undefined}
          >
            <input
              id="unsubscriber-add"
              inputMode="tel"
              value={added}
              aria-invalid={addedInvalid}
              onChange={(e) => setAdded(e.target.value)}
            />
          </Field>
          <button type="submit" disabled={create.isPending || added === "" || addedInvalid}>
            Add
          </button>
        </form>
      )}
      <ErrorBanner error={create.error} title="Could not add the unsubscriber" />
      <ErrorBanner error={remove.error} title="Could not remove the unsubscriber" />
      <ErrorBanner error={list.error} title="Could not list unsubscribers" />
      {!list.isPending && (
        <Table
          caption="Unsubscribers"
          rows={rows}
          rowKey={(u) => u.name}
          empty="Nobody has unsubscribed."
          hasMore={list.hasNextPage}
          loadingMore={list.isFetchingNextPage}
          onLoadMore={() => void list.fetchNextPage()}
          columns={[
            { header: "Phone", cell: (u) => u.phone },
            { header: "How", cell: (u) => enumName(Method, u.unsubscribeMethod) },
            { header: "Since", cell: (u) => time(u.createTime) },
            {
              header: "Actions",
              cell: (u) =>
                canAdd === true ? (
                  <button
                    type="button"
                    onClick={() => remove.mutate({ name: u.name })}
                    aria-label={`Remove ${u.phone}`}
                  >
                    Remove
                  </button>
                ) : null,
            },
          ]}
        />
      )}
    </section>
  );
}
