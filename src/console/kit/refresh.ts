/** Refetching every query of a service after a write to its resources. */
import type { DescService } from "@bufbuild/protobuf";
import { createConnectQueryKey } from "@connectrpc/connect-query";
import { useQueryClient } from "@tanstack/react-query";

/** A function that invalidates (and so refetches) every query of `service`. */
export function useRefresh(service: DescService): () => Promise<void> {
  const queryClient = useQueryClient();
  return () =>
    queryClient.invalidateQueries({
      queryKey: createConnectQueryKey({ schema: service, cardinality: undefined }),
    });
}
