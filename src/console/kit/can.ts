/**
 * Whether the credential may call a method, asked of the API itself: the
 * method is called with a request that can do nothing (it fails validation,
 * which runs after authorization), so PERMISSION_DENIED means "may not" and
 * anything else "may". Answers are kept for the session.
 */
import type { DescMessage, DescMethodUnary, MessageInitShape } from "@bufbuild/protobuf";
import { callUnaryMethod, useTransport } from "@connectrpc/connect-query";
import { useQuery } from "@tanstack/react-query";
import { isRefusal } from "./errors.js";

export function useCan<I extends DescMessage, O extends DescMessage>(
  method: DescMethodUnary<I, O>,
  probe: MessageInitShape<I>,
): boolean | undefined {
  const transport = useTransport();
  const q = useQuery({
    queryKey: ["can", method.parent.typeName, method.name, probe],
    queryFn: async () => {
      try {
        await callUnaryMethod(transport, method, probe);
        return true;
      } catch (err) {
        return !isRefusal(err);
      }
    },
    staleTime: Number.POSITIVE_INFINITY,
    retry: false,
  });
  return q.data;
}
