/**
 * A secret the API shows once (an API key's secret, a service account's
 * key file): a modal dialog with the secret, a copy button and a download,
 * gone for good once closed.
 */
import { useEffect, useRef, useState } from "react";

export interface SecretDialogProps {
  title: string;
  /** What the secret is and that it is shown once. */
  description: string;
  secret: string;
  /** The download's file name. */
  fileName: string;
  mimeType?: string;
  onClose: () => void;
}

export function SecretDialog(props: SecretDialogProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const [copied, setCopied] = useState<string>("");
  useEffect(() => {
    const d = ref.current;
    if (d !== null && !d.open) d.showModal();
  }, []);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(props.secret);
      setCopied("Copied to the clipboard.");
    } catch {
      // No clipboard permission: select it for a manual copy.
      const field = ref.current?.querySelector("textarea");
      field?.select();
      setCopied("Selected: copy it with Ctrl+C / ⌘C.");
    }
  };
  const download = () => {
    const url = URL.createObjectURL(new Blob([props.secret], { type: props.mimeType ?? "text/plain" }));
    const a = document.createElement("a");
    a.href = url;
    a.download = props.fileName;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  };
  return (
    <dialog ref={ref} className="secret" aria-labelledby="secret-title" onClose={props.onClose}>
      <h2 id="secret-title">{props.title}</h2>
      <p>{props.description}</p>
      <label htmlFor="secret-value">Secret (shown once)</label>
      <textarea id="secret-value" readOnly value={props.secret} rows={props.secret.includes("\n") ? 8 : 2} />
      <div className="actions">
        <button type="button" onClick={() => void copy()}>
          Copy
        </button>
        <button type="button" onClick={download}>
          Download
        </button>
        <button type="button" className="primary" onClick={() => ref.current?.close()}>
          I have saved it
        </button>
      </div>
      <p role="status" className="muted">
        {copied}
      </p>
    </dialog>
  );
}
