/**
 * The API's targets (issue #12, re-targeted on the floor by issue #31),
 * checked against one run's figures (ratios within the run, so the
 * machine's load moves both sides). Printed, never
 * asserted: a benchmark reports, it does not fail on a noisy machine.
 */
import type { Row, TargetInfo } from "./run.js";

interface Check {
  target: string;
  measured: string;
  holds: boolean | undefined;
}

const MB = 1048576;

function cpu(rows: Row[], backend: string, transport: string, op: string): number | undefined {
  return loadRow(rows, backend, transport, op)?.serverCpuMsPerRequest;
}

/** The load scenario's row of `backend`, when it ran without error. */
function loadRow(rows: Row[], backend: string, transport: string, op: string): Row | undefined {
  return rows.find(
    (r) =>
      r.backend === backend &&
      r.transport === transport &&
      r.scenario === op &&
      r.page === undefined &&
      r.error === undefined,
  );
}

function ratioCheck(
  target: string,
  limit: number,
  numerator: number | undefined,
  denominator: number | undefined,
): Check {
  if (numerator === undefined || denominator === undefined || denominator === 0) {
    return { target, measured: "not measured", holds: undefined };
  }
  const ratio = numerator / denominator;
  return {
    target,
    measured: `${ratio.toFixed(2)}x (${numerator.toFixed(3)} / ${denominator.toFixed(3)} ms)`,
    holds: ratio <= limit,
  };
}

export function targetChecks(rows: Row[], targets: TargetInfo[]): Check[] {
  const checks: Check[] = [];
  // 1. API on PostgreSQL against the floor (issue #31 item 2): the bare
  // connect-node handlers plus the one prepared statement each operation
  // needs, measured in the same run.
  for (const transport of ["grpc", "connect", "connect-h1"]) {
    for (const op of ["create", "get", "list"]) {
      checks.push(
        ratioCheck(
          `API: postgres ${transport} ${op} server CPU/req <= 1.2x floor`,
          1.2,
          cpu(rows, "postgres", transport, op),
          cpu(rows, "floor", transport, op),
        ),
      );
    }
  }
  for (const [rest, connect] of [
    ["rest", "connect"],
    ["rest-h1", "connect-h1"],
  ] as const) {
    for (const op of ["create", "get", "list"]) {
      checks.push(
        ratioCheck(
          `API: postgres ${rest} ${op} server CPU/req <= 1.1x ${connect}`,
          1.1,
          cpu(rows, "postgres", rest, op),
          cpu(rows, "postgres", connect, op),
        ),
      );
    }
  }
  // 3. The embedded default (only when the run measured PGlite).
  if (targets.some((t) => t.backend === "pglite")) {
    for (const transport of ["grpc", "connect", "rest"]) {
      for (const op of ["create", "get", "list"]) {
        checks.push(
          ratioCheck(
            `Embedded: pglite ${transport} ${op} server CPU/req <= 2x postgres`,
            2,
            cpu(rows, "pglite", transport, op),
            cpu(rows, "postgres", transport, op),
          ),
        );
      }
    }
  }
  for (const [backend, limitMb] of [
    ["pglite", 200],
    ["postgres", 110],
  ] as const) {
    const info = targets.find((t) => t.backend === backend);
    if (info === undefined) continue;
    const rss = info.idleRssBytes;
    checks.push({
      target: `Embedded: idle RSS on ${backend} <= ${limitMb} MB (the compiled server is the whole process tree)`,
      measured: rss === undefined ? "not measured" : `${(rss / MB).toFixed(0)} MB`,
      holds: rss === undefined ? undefined : rss <= limitMb * MB,
    });
  }
  return checks;
}

/**
 * What the floor (one PostgreSQL statement per request through connect-node,
 * constant answers) says about the ceiling ratios: how much of the ceiling's
 * budget the database round trip alone takes, and the server against it.
 */
function floorLines(rows: Row[]): string[] {
  const lines: string[] = [];
  for (const transport of ["grpc", "connect", "connect-h1", "rest", "rest-h1"]) {
    for (const op of ["create", "get", "list"]) {
      const ceiling = cpu(rows, "ceiling", transport, op);
      const floor = cpu(rows, "floor", transport, op);
      const server = cpu(rows, "postgres", transport, op);
      if (ceiling === undefined || floor === undefined) continue;
      const serverGc = loadRow(rows, "postgres", transport, op)?.gcMsPerRequest;
      const floorGc = loadRow(rows, "floor", transport, op)?.gcMsPerRequest;
      const gc =
        serverGc === undefined || floorGc === undefined
          ? ""
          : ` (GC pauses ${serverGc.toFixed(3)} against ${floorGc.toFixed(3)} ms)`;
      const against =
        server === undefined ? "" : `; the server ${(server / floor).toFixed(2)}x the floor${gc}`;
      lines.push(
        `  ${`${transport} ${op}`.padEnd(18)} floor ${floor.toFixed(3)} ms = ${(floor / ceiling).toFixed(2)}x the ceiling${against}`,
      );
    }
  }
  if (lines.length === 0) return [];
  return [
    "Floor (the ceiling plus one prepared PostgreSQL statement per request, constant answers):",
    ...lines,
  ];
}

export function printTargets(rows: Row[], targets: TargetInfo[]): string {
  const checks = targetChecks(rows, targets);
  const width = Math.max(...checks.map((c) => c.target.length));
  const lines = checks.map(
    (c) =>
      `${c.holds === undefined ? "  ?  " : c.holds ? "HOLDS" : "MISS "}  ${c.target.padEnd(width)}  ${c.measured}`,
  );
  const held = checks.filter((c) => c.holds === true).length;
  const measured = checks.filter((c) => c.holds !== undefined).length;
  return [
    `API targets (issues #12 and #31; ratios within this run): ${held} of ${measured} measured hold`,
    ...lines,
    ...floorLines(rows),
    `Runtime: this run's node is ${process.version} (target: a supported LTS, 22 or 24).`,
    "Call engine and two replicas: see `npm run bench:calls`.",
  ].join("\n");
}
