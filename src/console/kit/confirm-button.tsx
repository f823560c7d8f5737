/**
 * A destructive action asked twice: the first press turns the button into
 * "Confirm …", the second runs it.
 */
import { useState } from "react";

export function ConfirmButton({
  label,
  target,
  pending,
  onConfirm,
}: {
  /** The action, e.g. "Delete". */
  label: string;
  /** What it acts on, for the buttons' names ("Delete key-1", "Confirm: delete key-1"). */
  target: string;
  pending: boolean;
  onConfirm: () => void;
}) {
  const [confirming, setConfirming] = useState(false);
  return confirming ? (
    <button type="button" className="danger" disabled={pending} onClick={onConfirm}>
      Confirm: {label.toLowerCase()} {target}
    </button>
  ) : (
    <button type="button" onClick={() => setConfirming(true)} aria-label={`${label} ${target}`}>
      {label}
    </button>
  );
}
