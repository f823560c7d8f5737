import type { DescService } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { unimplemented } from "./errors.js";

/**
 * An implementation of `desc` whose every method answers UNIMPLEMENTED with
 * the method's name: the contract is served in full, and what is not built
 * yet says so instead of pretending.
 */
export function unimplementedService<S extends DescService>(desc: S): ServiceImpl<S> {
  const impl: Record<string, () => never> = {};
  for (const method of desc.methods) {
    impl[method.localName] = () => {
      throw unimplemented(`${desc.typeName}.${method.name}`);
    };
  }
  return impl as unknown as ServiceImpl<S>;
}
