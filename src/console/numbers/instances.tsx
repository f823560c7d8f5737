/**
 * A project's phone number instances as a list (filter by prefix, released
 * ones too), with what the credential may do to each (instance-actions.tsx):
 * edit, release, move, and split a range; the operator also suspends,
 * resumes and completes port-ins. `ranges` lists only ranges: the
 * API has no such filter, so the list reads further pages until it has a
 * screenful of them or there are no more.
 */
import { useInfiniteQuery } from "@connectrpc/connect-query";
import { useEffect, useState } from "react";
import {
  PhoneNumberInstance_LifecycleState as LifecycleState,
  type PhoneNumberInstance,
  PhoneNumberInstances,
} from "../../../gen/enfonica/numbering/v1beta1/phone_number_instances_pb.js";
import { useSession } from "../app.js";
import { useCan } from "../kit/can.js";
import { TextField } from "../kit/fields.js";
import { enumName, lastSegment, time } from "../kit/format.js";
import { ListTable, PAGED, pagedRows } from "../kit/list.js";
import { formatLabels } from "../kit/lists.js";
import {
  EditInstance,
  MoveInstance,
  numberOf,
  numberText,
  OperatorLifecycle,
  Release,
  SplitRange,
} from "./instance-actions.js";

const PREFIX = /^\+?[0-9]{0,15}$/;
/** How many ranges the ranges list reads pages for before waiting for "Load more". */
const SCREENFUL = 20;

type Action = "edit" | "move" | "split";

export function Instances({
  ranges = false,
  title,
  empty,
}: {
  ranges?: boolean;
  title: string;
  empty: string;
}) {
  const { session } = useSession();
  const none = `${session.project}/phoneNumberInstances/`;
  // Probes: each fails validation (an empty id) after authorization (kit/can.ts).
  const canWrite = useCan(PhoneNumberInstances.method.createPhoneNumberInstance, { parent: session.project });
  const canMove = useCan(PhoneNumberInstances.method.movePhoneNumberInstance, {
    name: none,
    destinationParent: session.project,
  });
  const canSplit = useCan(PhoneNumberInstances.method.splitRange, { phoneNumberInstance: none, size: 1 });
  const [prefix, setPrefix] = useState("");
  const [includeDeleted, setIncludeDeleted] = useState(false);
  const [acting, setActing] = useState<{ name: string; action: Action } | undefined>(undefined);
  const prefixInvalid = !PREFIX.test(prefix);
  const list = useInfiniteQuery(
    PhoneNumberInstances.method.listPhoneNumberInstances,
    {
      parent: session.project,
      pageSize: ranges ? 100 : 50,
      pageToken: "",
      prefix: prefixInvalid ? "" : prefix,
      includeDeleted,
    },
    PAGED,
  );
  const all = pagedRows(list, (p) => p.phoneNumberInstances);
  const rows = ranges ? all.filter((r) => r.range !== undefined) : all;
  const { hasNextPage, isFetching, fetchNextPage, isFetchNextPageError } = list;
  // A failed page stops the reading (its error is shown); "Load more" tries again.
  const reading = ranges && rows.length < SCREENFUL && hasNextPage && !isFetchNextPageError;
  useEffect(() => {
    if (reading && !isFetching) void fetchNextPage();
  }, [reading, isFetching, fetchNextPage]);
  const target = all.find((r) => r.name === acting?.name);
  const done = () => setActing(undefined);
  const id = ranges ? "ranges" : "instances";
  const actionButton = (r: PhoneNumberInstance, action: Action, label: string) => (
    <button
      type="button"
      onClick={() => setActing({ name: r.name, action })}
      aria-label={`${label} ${numberOf(r)}`}
    >
      {label}
    </button>
  );
  return (
    <section aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{title}</h2>
      <div className="filters row">
        <TextField
          label="Number starts with"
          id={`${id}-prefix`}
          invalid={prefixInvalid && "Digits, optionally after a +."}
          value={prefix}
          onChange={setPrefix}
        />
        <div className="check">
          <input
            id={`${id}-deleted`}
            type="checkbox"
            checked={includeDeleted}
            onChange={(e) => setIncludeDeleted(e.target.checked)}
          />
          <label htmlFor={`${id}-deleted`}>Include released numbers</label>
        </div>
      </div>
      <ListTable
        list={list}
        errorTitle={`Could not list the project's ${ranges ? "ranges" : "numbers"}`}
        caption={title}
        rows={rows}
        rowKey={(r) => r.name}
        empty={reading ? "Looking for ranges…" : empty}
        columns={[
          { header: "Number", cell: (r) => <code>{numberText(r)}</code> },
          { header: "Name", cell: (r) => r.displayName },
          { header: "State", cell: (r) => enumName(LifecycleState, r.lifecycleState) },
          { header: "Call handlers", cell: (r) => r.incomingCallHandlerUris.join(" ") },
          { header: "Message handlers", cell: (r) => r.incomingMessageHandlerUris.join(" ") },
          { header: "Labels", cell: (r) => formatLabels(r.labels) },
          {
            header: "Compliant",
            cell: (r) =>
              r.regulatoryListing === ""
                ? "No listing"
                : `${r.compliant ? "Yes" : "No"} (listing ${lastSegment(r.regulatoryListing)})`,
          },
          { header: "Created", cell: (r) => time(r.createTime) },
          {
            header: "Actions",
            cell: (r) =>
              r.lifecycleState === LifecycleState.DELETED ? null : (
                <span className="actions">
                  {canWrite === true && actionButton(r, "edit", "Edit")}
                  {canSplit === true &&
                    r.range !== undefined &&
                    r.range.size > 1 &&
                    actionButton(r, "split", "Split")}
                  {canMove === true && actionButton(r, "move", "Move")}
                  {session.operator && <OperatorLifecycle instance={r} />}
                  {canWrite === true && <Release instance={r} />}
                </span>
              ),
          },
        ]}
      />
      {target !== undefined && acting?.action === "edit" && (
        <EditInstance key={target.name} instance={target} onDone={done} />
      )}
      {target !== undefined && acting?.action === "move" && (
        <MoveInstance key={target.name} instance={target} onDone={done} />
      )}
      {target !== undefined && acting?.action === "split" && (
        <SplitRange key={target.name} instance={target} onDone={done} />
      )}
    </section>
  );
}
