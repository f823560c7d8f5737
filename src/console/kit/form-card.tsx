/**
 * A form on a card: its accessible name and heading, the fields, a primary
 * submit button, what happened (a status line) and the error banner of the
 * failed request.
 */
import type { FormEvent, ReactNode } from "react";
import { ErrorBanner } from "./errors.js";

export function FormCard({
  label,
  heading = label,
  onSubmit,
  submit,
  disabled,
  status,
  error,
  errorTitle,
  children,
}: {
  /** The form's accessible name. */
  label: string;
  /** The card's heading (h2), the label unless given; null for none. */
  heading?: string | null;
  onSubmit: () => void;
  /** The submit button's text. */
  submit: string;
  disabled: boolean;
  /** Shown after the button, e.g. the created resource; the page gives its role. */
  status?: ReactNode;
  error: unknown;
  errorTitle: string;
  children: ReactNode;
}) {
  const submitted = (e: FormEvent) => {
    e.preventDefault();
    onSubmit();
  };
  return (
    <form className="card" onSubmit={submitted} aria-label={label}>
      {heading !== null && <h2>{heading}</h2>}
      {children}
      <button type="submit" className="primary" disabled={disabled}>
        {submit}
      </button>
      {status}
      <ErrorBanner error={error} title={errorTitle} />
    </form>
  );
}
