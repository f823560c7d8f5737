/**
 * What can be done to one of a project's phone number instances (a single
 * number or a range's primary instance), each a small form under the list:
 * edit its name, handler URIs and labels; release it; move it to another
 * project; split a range in two; and the operator's suspend, resume and
 * completing a port-in.
 */
import { useMutation } from "@connectrpc/connect-query";
import { type FormEvent, useId, useState } from "react";
import {
  PhoneNumberInstance_LifecycleState as LifecycleState,
  type PhoneNumberInstance,
  PhoneNumberInstances,
} from "../../../gen/enfonica/numbering/v1beta1/phone_number_instances_pb.js";
import { NumberingAdmin } from "../../../gen/switchboard/admin/v1/numbering_pb.js";
import { ErrorBanner } from "../kit/errors.js";
import { TextAreaField, TextField } from "../kit/fields.js";
import { formatLabels, parseLabels, parseLines } from "../kit/lists.js";
import { useRefresh } from "../kit/refresh.js";

/** The number, or a range's first and last numbers and its size. */
export function numberText(instance: PhoneNumberInstance): string {
  const r = instance.range;
  if (r === undefined) return instance.phoneNumber?.phoneNumber ?? "";
  return `${r.startPhoneNumber} – ${r.endPhoneNumber} (${r.size} numbers)`;
}

/** The instance's own number (a range's first), for buttons' names. */
export function numberOf(instance: PhoneNumberInstance): string {
  return instance.phoneNumber?.phoneNumber ?? "";
}

export function Release({ instance }: { instance: PhoneNumberInstance }) {
  const refresh = useRefresh(PhoneNumberInstances);
  const [confirming, setConfirming] = useState(false);
  const release = useMutation(PhoneNumberInstances.method.deletePhoneNumberInstance, { onSuccess: refresh });
  const number = instance.phoneNumber?.phoneNumber ?? "";
  if (release.error) return <ErrorBanner error={release.error} title={`Could not release ${number}`} />;
  return confirming ? (
    <button
      type="button"
      className="danger"
      onClick={() => release.mutate({ name: instance.name })}
      disabled={release.isPending}
    >
      Confirm release of {number}
    </button>
  ) : (
    <button type="button" onClick={() => setConfirming(true)} aria-label={`Release ${number}`}>
      Release
    </button>
  );
}

export function EditInstance({ instance, onDone }: { instance: PhoneNumberInstance; onDone: () => void }) {
  const id = useId();
  const refresh = useRefresh(PhoneNumberInstances);
  const [displayName, setDisplayName] = useState(instance.displayName);
  const [callUris, setCallUris] = useState(instance.incomingCallHandlerUris.join("\n"));
  const [messageUris, setMessageUris] = useState(instance.incomingMessageHandlerUris.join("\n"));
  const [labels, setLabels] = useState(formatLabels(instance.labels));
  const parsed = parseLabels(labels);
  const update = useMutation(PhoneNumberInstances.method.updatePhoneNumberInstance, {
    onSuccess: async () => {
      await refresh();
      onDone();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if ("error" in parsed) return;
    update.mutate({
      name: instance.name,
      phoneNumberInstance: {
        displayName,
        incomingCallHandlerUris: parseLines(callUris),
        incomingMessageHandlerUris: parseLines(messageUris),
        labels: parsed.labels,
      },
      updateMask: {
        paths: ["display_name", "incoming_call_handler_uris", "incoming_message_handler_uris", "labels"],
      },
    });
  };
  return (
    <form className="card" onSubmit={submit} aria-label={`Edit ${instance.phoneNumber?.phoneNumber}`}>
      <h3>Edit {instance.phoneNumber?.phoneNumber}</h3>
      <TextField label="Display name" id={`${id}-name`} value={displayName} onChange={setDisplayName} />
      <TextAreaField
        label="Incoming call handler URIs (one per line)"
        id={`${id}-calls`}
        rows={2}
        value={callUris}
        onChange={setCallUris}
      />
      <TextAreaField
        label="Incoming message handler URIs (one per line)"
        id={`${id}-messages`}
        rows={2}
        value={messageUris}
        onChange={setMessageUris}
      />
      <TextAreaField
        label="Labels (key=value per line)"
        id={`${id}-labels`}
        invalid={"error" in parsed && parsed.error}
        rows={2}
        value={labels}
        onChange={setLabels}
      />
      <div className="actions">
        <button type="submit" className="primary" disabled={update.isPending || "error" in parsed}>
          Save
        </button>
        <button type="button" onClick={onDone}>
          Cancel
        </button>
      </div>
      <ErrorBanner error={update.error} title="Could not save" />
    </form>
  );
}

const PROJECT_ID = /^[a-z0-9]([a-z0-9-]{0,28}[a-z0-9])?$/;

export function MoveInstance({ instance, onDone }: { instance: PhoneNumberInstance; onDone: () => void }) {
  const id = useId();
  const refresh = useRefresh(PhoneNumberInstances);
  const [destination, setDestination] = useState("");
  const bad = destination !== "" && !PROJECT_ID.test(destination);
  const move = useMutation(PhoneNumberInstances.method.movePhoneNumberInstance, {
    onSuccess: async () => {
      await refresh();
      onDone();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    move.mutate({ name: instance.name, destinationParent: `projects/${destination}` });
  };
  return (
    <form className="card" onSubmit={submit} aria-label={`Move ${numberOf(instance)}`}>
      <h3>Move {numberText(instance)}</h3>
      <p className="muted">
        It keeps its id and configuration, handler URIs included; flows and SIP domains must be set up again
        in the destination, handlers must accept its signing key, and the regulatory listing stays here. Needs
        the move permission on both projects.
      </p>
      <TextField
        label="Destination project ID"
        id={`${id}-destination`}
        invalid={bad && "A project ID: lower-case letters, digits and dashes."}
        required
        value={destination}
        onChange={setDestination}
      />
      <div className="actions">
        <button type="submit" className="primary" disabled={move.isPending || destination === "" || bad}>
          Move
        </button>
        <button type="button" onClick={onDone}>
          Cancel
        </button>
      </div>
      <ErrorBanner error={move.error} title="Could not move it" />
    </form>
  );
}

export function SplitRange({ instance, onDone }: { instance: PhoneNumberInstance; onDone: () => void }) {
  const id = useId();
  const refresh = useRefresh(PhoneNumberInstances);
  const total = instance.range?.size ?? 1;
  const [size, setSize] = useState(String(Math.max(1, Math.floor(total / 2))));
  const n = Number(size);
  const bad = !Number.isInteger(n) || n < 1 || n > total - 1;
  const split = useMutation(PhoneNumberInstances.method.splitRange, {
    onSuccess: async () => {
      await refresh();
      onDone();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    split.mutate({ phoneNumberInstance: instance.name, size: n });
  };
  return (
    <form className="card" onSubmit={submit} aria-label={`Split ${numberOf(instance)}`}>
      <h3>Split {numberText(instance)}</h3>
      <TextField
        label="Numbers kept in this range"
        id={`${id}-size`}
        inputMode="numeric"
        invalid={bad && `1 to ${total - 1}.`}
        hint={bad ? undefined : `The other ${total - n} form a new range with the same configuration.`}
        value={size}
        onChange={setSize}
      />
      <div className="actions">
        <button type="submit" className="primary" disabled={split.isPending || bad}>
          Split
        </button>
        <button type="button" onClick={onDone}>
          Cancel
        </button>
      </div>
      <ErrorBanner error={split.error} title="Could not split the range" />
    </form>
  );
}

/**
 * The operator's lifecycle button for an instance: Suspend an ACTIVE one,
 * Resume a SUSPENDED one, Complete the port-in of a PENDING one.
 */
export function OperatorLifecycle({ instance }: { instance: PhoneNumberInstance }) {
  const refresh = useRefresh(PhoneNumberInstances);
  const suspend = useMutation(NumberingAdmin.method.suspendPhoneNumberInstance, { onSuccess: refresh });
  const resume = useMutation(NumberingAdmin.method.resumePhoneNumberInstance, { onSuccess: refresh });
  const complete = useMutation(NumberingAdmin.method.completePortIn, { onSuccess: refresh });
  const error = suspend.error ?? resume.error ?? complete.error;
  const number = numberOf(instance);
  const pending = suspend.isPending || resume.isPending || complete.isPending;
  const button = (label: string, run: () => void) => (
    <button type="button" disabled={pending} onClick={run} aria-label={`${label} ${number}`}>
      {label}
    </button>
  );
  const name = { name: instance.name };
  return (
    <>
      {instance.lifecycleState === LifecycleState.ACTIVE && button("Suspend", () => suspend.mutate(name))}
      {instance.lifecycleState === LifecycleState.SUSPENDED && button("Resume", () => resume.mutate(name))}
      {instance.lifecycleState === LifecycleState.PENDING &&
        button("Complete port-in", () => complete.mutate(name))}
      {error && <ErrorBanner error={error} title={`Could not change ${number}`} />}
    </>
  );
}
