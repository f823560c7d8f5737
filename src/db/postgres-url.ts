/**
 * DATABASE_URL's `host` query parameter, as libpq reads it: the directory
 * of a Unix-domain socket (`postgres://user@localhost/db?host=/var/run/postgresql`;
 * psql and most PostgreSQL drivers take it). postgres.js reads the host from
 * the URL's authority only and would send `host` to the server as a
 * setting, which the server refuses ("unrecognized configuration parameter").
 * So a `host` that is a directory (it starts with `/`) is taken out of the
 * URL and given to the driver as its `host` option, which connects to
 * `<dir>/.s.PGSQL.<port>`. Any other `host` value is left as it is.
 */

/** `url` without a socket-directory `host` parameter, and that directory (undefined: none). */
export function socketHostOf(url: string): { url: string; socketDir: string | undefined } {
  const q = url.indexOf("?");
  if (q < 0) return { url, socketDir: undefined };
  let socketDir: string | undefined;
  // Not URLSearchParams on `new URL`: a multi-host URL (postgres://a:5432,b:5432/db) is no WHATWG URL.
  const kept = url
    .slice(q + 1)
    .split("&")
    .filter((pair) => {
      const eq = pair.indexOf("=");
      const key = eq < 0 ? pair : pair.slice(0, eq);
      if (key !== "host" || eq < 0) return true;
      let value: string;
      try {
        value = decodeURIComponent(pair.slice(eq + 1));
      } catch {
        return true; // not percent-encoding: left for the driver (and the server) to refuse
      }
      if (!value.startsWith("/")) return true;
      socketDir = value;
      return false;
    });
  if (socketDir === undefined) return { url, socketDir };
  return { url: kept.length > 0 ? `${url.slice(0, q)}?${kept.join("&")}` : url.slice(0, q), socketDir };
}

/** postgres.js's arguments for `url`: the URL, and `options` with the socket's `host` when it names one. */
export function postgresArgs<O extends object>(url: string, options: O): [string, O & { host?: string }] {
  const { url: rest, socketDir } = socketHostOf(url);
  return [rest, socketDir === undefined ? options : { ...options, host: socketDir }];
}
