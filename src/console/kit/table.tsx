/**
 * A list as a table: columns of cells, a caption for screen readers, the
 * empty state when there are no rows, and "Load more" while the API has a
 * next page token. Scrolls sideways on narrow screens (focusable, so a
 * keyboard can scroll it too).
 */
import type { ReactNode } from "react";
import { EmptyState } from "./empty.js";

export interface Column<T> {
  header: string;
  cell: (row: T) => ReactNode;
}

export interface TableProps<T> {
  caption: string;
  columns: Column<T>[];
  rows: T[];
  rowKey: (row: T) => string;
  empty: ReactNode;
  hasMore?: boolean;
  loadingMore?: boolean;
  onLoadMore?: () => void;
}

export function Table<T>(props: TableProps<T>) {
  if (props.rows.length === 0) {
    return typeof props.empty === "string" ? <EmptyState title={props.empty} /> : props.empty;
  }
  return (
    <>
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be focusable to scroll by keyboard */}
      <section className="table-wrap" tabIndex={0} aria-label={props.caption}>
        <table>
          <caption className="sr-only">{props.caption}</caption>
          <thead>
            <tr>
              {props.columns.map((c) => (
                <th key={c.header} scope="col">
                  {c.header}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {props.rows.map((row) => (
              <tr key={props.rowKey(row)}>
                {props.columns.map((c) => (
                  <td key={c.header} data-label={c.header}>
                    {c.cell(row)}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </section>
      {props.hasMore === true && (
        <button type="button" className="load-more" onClick={props.onLoadMore} disabled={props.loadingMore}>
          {props.loadingMore === true ? "Loading…" : "Load more"}
        </button>
      )}
    </>
  );
}
