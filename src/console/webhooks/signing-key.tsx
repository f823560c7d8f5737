/**
 * The project's webhook signing key, with which receivers verify the
 * signatures of the requests sent to them: shown on request (it is a
 * secret) to a credential that may read it, with a copy button; the
 * operator can rotate it (asked to confirm).
 */
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { useState } from "react";
import { Projects } from "../../../gen/switchboard/admin/v1/projects_pb.js";
import { useSession } from "../app.js";
import { useCan } from "../kit/can.js";
import { ConfirmButton } from "../kit/confirm-button.js";
import { ErrorBanner } from "../kit/errors.js";
import { time } from "../kit/format.js";
import { useRefresh } from "../kit/refresh.js";

function base64(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

export function SigningKey() {
  const { session } = useSession();
  // The probe's name has a trailing slash: it fails validation after authorization.
  const canRead = useCan(Projects.method.getSigningKey, { name: `${session.project}/signingKey/` });
  const [shown, setShown] = useState(false);
  if (canRead !== true) return null;
  return (
    <section aria-labelledby="signing-key-title" className="card">
      <h2 id="signing-key-title">Signing key</h2>
      <p className="muted">
        Receivers verify the signature of every request sent to them with this key (see the webhooks
        documentation). It is a secret.
      </p>
      {shown ? (
        <Shown />
      ) : (
        <button type="button" onClick={() => setShown(true)}>
          Show the signing key
        </button>
      )}
    </section>
  );
}

function Shown() {
  const { session } = useSession();
  const refresh = useRefresh(Projects);
  const [copied, setCopied] = useState("");
  const key = useQuery(Projects.method.getSigningKey, { name: `${session.project}/signingKey` });
  const rotate = useMutation(Projects.method.rotateSigningKey, { onSuccess: refresh });
  const value = key.data === undefined ? "" : base64(key.data.key);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setCopied("Copied to the clipboard.");
    } catch {
      setCopied("Select it and copy it with Ctrl+C / ⌘C.");
    }
  };
  return (
    <>
      <ErrorBanner error={key.error} title="Could not get the signing key" />
      {key.data !== undefined && (
        <>
          <label htmlFor="signing-key-value">Signing key (base64), created {time(key.data.createTime)}</label>
          <textarea id="signing-key-value" readOnly rows={2} value={value} data-testid="signing-key" />
          <div className="actions">
            <button type="button" onClick={() => void copy()}>
              Copy
            </button>
            {session.operator && (
              <ConfirmButton
                label="Rotate"
                target="the signing key"
                pending={rotate.isPending}
                onConfirm={() => rotate.mutate({ name: `${session.project}/signingKey` })}
              />
            )}
          </div>
          <p role="status" className="muted">
            {copied}
            {rotate.isSuccess && " Rotated: webhooks are signed with the new key from now on."}
          </p>
        </>
      )}
      <ErrorBanner error={rotate.error} title="Could not rotate the signing key" />
    </>
  );
}
