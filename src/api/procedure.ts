import type { DescMethod } from "@bufbuild/protobuf";

const names = new WeakMap<DescMethod, string>();

/**
 * `package.Service/Method`: the key of method policies, rate limits,
 * idempotent methods and error logs. Built once per method rather than
 * concatenated (and hashed again as a lookup key) by every interceptor on
 * every request.
 */
export function procedureOf(method: DescMethod): string {
  let name = names.get(method);
  if (name === undefined) {
    name = `${method.parent.typeName}/${method.name}`;
    names.set(method, name);
  }
  return name;
}
