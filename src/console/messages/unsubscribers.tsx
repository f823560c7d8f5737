/** A project's unsubscribers: filtered by phone, added by hand, removed. */
import { useInfiniteQuery, useMutation } from "@connectrpc/connect-query";
import { type FormEvent, useState } from "react";
import {
  Unsubscriber_UnsubscribeMethod as Method,
  Unsubscribers as UnsubscribersService,
} from "../../../gen/enfonica/messaging/v1/unsubscribers_pb.js";
import { useSession } from "../app.js";
import { useCan } from "../kit/can.js";
import { ErrorBanner } from "../kit/errors.js";
import { TextField } from "../kit/fields.js";
import { enumName, time } from "../kit/format.js";
import { ListTable, PAGED, pagedRows } from "../kit/list.js";
import { useRefresh } from "../kit/refresh.js";

const E164 = /^\+[1-9][0-9]{1,14}$/;

export function Unsubscribers() {
  const { session } = useSession();
  const canAdd = useCan(UnsubscribersService.method.createUnsubscriber, { parent: session.project });
  const [phone, setPhone] = useState("");
  const [added, setAdded] = useState("");
  const refresh = useRefresh(UnsubscribersService);
  const list = useInfiniteQuery(
    UnsubscribersService.method.listUnsubscribers,
    { parent: session.project, pageSize: 25, pageToken: "", phone: E164.test(phone) ? phone : "" },
    PAGED,
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
  const rows = pagedRows(list, (p) => p.unsubscribers);
  return (
    <section aria-labelledby="unsubscribers-title">
      <h2 id="unsubscribers-title">Unsubscribers</h2>
      <div className="filters row">
        <TextField
          label="Phone (E.164)"
          id="unsubscribers-phone"
          inputMode="tel"
          value={phone}
          onChange={setPhone}
        />
      </div>
      {canAdd === true && (
        <form className="row" onSubmit={submit} aria-label="Add an unsubscriber">
          <TextField
            label="Add a number"
            id="unsubscriber-add"
            invalid={addedInvalid && "A number in E.164, e.g. +61491570156."}
            inputMode="tel"
            value={added}
            onChange={setAdded}
          />
          <button type="submit" disabled={create.isPending || added === "" || addedInvalid}>
            Add
          </button>
        </form>
      )}
      <ErrorBanner error={create.error} title="Could not add the unsubscriber" />
      <ErrorBanner error={remove.error} title="Could not remove the unsubscriber" />
      <ListTable
        list={list}
        errorTitle="Could not list unsubscribers"
        loading={null}
        caption="Unsubscribers"
        rows={rows}
        rowKey={(u) => u.name}
        empty="Nobody has unsubscribed."
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
    </section>
  );
}
