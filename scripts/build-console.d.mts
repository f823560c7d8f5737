/** Types of scripts/build-console.mjs, for the tests that build the console. */
export declare const BUDGET_BYTES: number;
export declare function buildConsole(options: {
  outdir: string;
  quiet?: boolean;
}): Promise<{ initialGzipBytes: number; files: string[] }>;
