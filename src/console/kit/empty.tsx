import type { ReactNode } from "react";

/** What a list shows when it has nothing (yet). */
export function EmptyState({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="empty" role="status">
      <p>
        <strong>{title}</strong>
      </p>
      {children}
    </div>
  );
}
