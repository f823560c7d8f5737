/**
 * A paged list (an infinite query over the API's page tokens) as a table:
 * the list's error, a loading line while the first page is on its way, then
 * the table with "Load more" while there is a next page.
 */
import type { ReactNode } from "react";
import { ErrorBanner } from "./errors.js";
import { Table, type TableProps } from "./table.js";

/** The options of an infinite query paged by `page_token` / `next_page_token`. */
export const PAGED = {
  pageParamKey: "pageToken",
  getNextPageParam: (l: { nextPageToken: string }) => l.nextPageToken || undefined,
} as const;

/** What ListTable needs of an infinite query. */
export interface PagedQuery<P> {
  data: { pages: P[] } | undefined;
  error: unknown;
  isPending: boolean;
  hasNextPage: boolean;
  isFetchingNextPage: boolean;
  fetchNextPage: () => Promise<unknown>;
}

/** Every loaded page's rows, in order. */
export function pagedRows<P, T>(list: PagedQuery<P>, rows: (page: P) => T[]): T[] {
  return list.data?.pages.flatMap(rows) ?? [];
}

export type ListTableProps<T> = Omit<TableProps<T>, "hasMore" | "loadingMore" | "onLoadMore"> & {
  list: PagedQuery<unknown>;
  /** The error banner's title when the list fails. */
  errorTitle: string;
  /** Shown while the first page loads; null shows nothing. */
  loading?: string | null;
  /** More alerts, between the list's error and the table. */
  notices?: ReactNode;
};

export function ListTable<T>({
  list,
  errorTitle,
  loading = "Loading…",
  notices,
  ...table
}: ListTableProps<T>) {
  return (
    <>
      <ErrorBanner error={list.error} title={errorTitle} />
      {notices}
      {list.isPending ? (
        loading !== null && <p role="status">{loading}</p>
      ) : (
        <Table
          {...table}
          hasMore={list.hasNextPage}
          loadingMore={list.isFetchingNextPage}
          onLoadMore={() => void list.fetchNextPage()}
        />
      )}
    </>
  );
}
