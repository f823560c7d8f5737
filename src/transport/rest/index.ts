/**
 * REST transcoding of the `google.api.http` rules of the generated
 * descriptors: see handler.ts for the entry point.
 */
export { DEFAULT_MAX_BODY_BYTES } from "./body.js";
export { createRestHandler, type RestHandler, type RestHandlerOptions, writeNotFound } from "./handler.js";
export { httpStatusOf, restErrorBody, statusNameOf } from "./respond.js";
export { compileRoutes, type Route, RouteConfigError, type RouteTable } from "./routes.js";
