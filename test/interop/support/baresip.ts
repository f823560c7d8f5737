/**
 * baresip (Debian's `baresip-core`, 1.0) run headless for the media interop
 * tests: a configuration directory written here with
 * - the microphone a WAV file (`aufile` source: 8 kHz mono 16-bit PCM),
 * - the received audio saved to WAV files (`sndfile`: `dump-…-dec.wav` is
 *   what it decoded from the far end, `dump-…-enc.wav` what it sent), the
 *   speaker an `aubridge` device nothing listens to (baresip 1.0 has no
 *   null player, and `aufile` is a source only in 1.0),
 * - its command interface on TCP (`ctrl_tcp`: netstrings of JSON, the
 *   `menu` module's commands: `dial`, `sndcode` for DTMF, `hangup`),
 * all on 127.0.0.1 (`-n 127.0.0.1`: baresip otherwise picks the default
 * interface). Each instance is killed by `stop()` (afterAll), whatever state it
 * is in.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect, createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface BaresipOptions {
  /** `sip:user@fqdn` of the account. */
  aor: string;
  password: string;
  /** The edge's UDP port on 127.0.0.1 (outbound proxy and registrar). */
  edgePort: number;
  /**
   * 16-bit mono PCM samples at 8 kHz that baresip sends as its microphone, followed by
   * silence up to two minutes: baresip 1.0 hangs up a call when its aufile source reaches
   * the end of the file ("audio error (0,end of file)").
   */
  microphone: Int16Array;
  /** Seconds between registrations (default 300). */
  regint?: number;
  /** The one codec it offers and accepts (default PCMU). */
  codec?: "PCMU" | "PCMA";
  /** `auto`: answers incoming calls at once (default `manual`). */
  answermode?: "manual" | "auto";
}

/** A free TCP port on 127.0.0.1 (closed again at once: baresip takes it next). */
async function freeTcpPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A RIFF/WAVE file of 16-bit mono PCM at 8 kHz. */
export function wav(samples: Int16Array): Buffer {
  const data = Buffer.alloc(samples.length * 2);
  for (let i = 0; i < samples.length; i++) data.writeInt16LE(samples[i]!, i * 2);
  const header = Buffer.alloc(44);
  header.write("RIFF", 0, "ascii");
  header.writeUInt32LE(36 + data.length, 4);
  header.write("WAVE", 8, "ascii");
  header.write("fmt ", 12, "ascii");
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(8000, 24);
  header.writeUInt32LE(16000, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write("data", 36, "ascii");
  header.writeUInt32LE(data.length, 40);
  return Buffer.concat([header, data]);
}

export class Baresip {
  private out = "";
  private ctrl: Socket | undefined;
  private ctrlBuffer = "";
  /** JSON messages from ctrl_tcp (responses and events), in order. */
  readonly messages: Array<Record<string, unknown>> = [];
  readonly exited: Promise<number | null>;
  private token = 0;

  private constructor(
    readonly dir: string,
    readonly child: ChildProcess,
    private readonly ctrlPort: number,
  ) {
    child.stdout?.on("data", (b: Buffer) => {
      this.out += b.toString();
    });
    child.stderr?.on("data", (b: Buffer) => {
      this.out += b.toString();
    });
    this.exited = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
  }

  static async start(options: BaresipOptions): Promise<Baresip> {
    const dir = mkdtempSync(join(tmpdir(), "sb-baresip-media-"));
    const ctrlPort = await freeTcpPort();
    const microphone = new Int16Array(Math.max(options.microphone.length, 120 * 8000));
    microphone.set(options.microphone);
    writeFileSync(join(dir, "microphone.wav"), wav(microphone));
    writeFileSync(
      join(dir, "accounts"),
      `<${options.aor};transport=udp>;auth_pass=${options.password};` +
        `outbound="sip:127.0.0.1:${options.edgePort};transport=udp";regint=${options.regint ?? 300};` +
        `audio_codecs=${options.codec ?? "PCMU"};answermode=${options.answermode ?? "manual"}\n`,
    );
    writeFileSync(
      join(dir, "config"),
      [
        "poll_method epoll",
        "sip_listen 127.0.0.1:0",
        `audio_source aufile,${join(dir, "microphone.wav")}`,
        "audio_player aubridge,speaker",
        "audio_alert aubridge,alert",
        "audio_srate 8000",
        "audio_channels 1",
        `snd_path ${dir}`,
        `ctrl_tcp_listen 127.0.0.1:${ctrlPort}`,
        "module_path /usr/lib/baresip/modules",
        "module g711.so",
        "module aufile.so",
        "module aubridge.so",
        "module sndfile.so",
        "module_app account.so",
        "module_app menu.so",
        "module_app ctrl_tcp.so",
        "",
      ].join("\n"),
    );
    const child = spawn("baresip", ["-f", dir, "-n", "127.0.0.1"], { stdio: ["ignore", "pipe", "pipe"] });
    const baresip = new Baresip(dir, child, ctrlPort);
    try {
      // Connected from the start: ctrl_tcp sends its events only to connected clients.
      await baresip.control();
    } catch (e) {
      await baresip.stop();
      throw e;
    }
    return baresip;
  }

  output(): string {
    return this.out;
  }

  /** Waits for `check` (true), failing with baresip's output if it exits or `limitMs` passes. */
  async until(check: () => boolean | Promise<boolean>, what: string, limitMs = 30_000): Promise<void> {
    const deadline = Date.now() + limitMs;
    while (!(await check())) {
      if (this.child.exitCode !== null)
        throw new Error(`baresip exited (${this.child.exitCode}):\n${this.out}`);
      if (Date.now() > deadline) throw new Error(`baresip: ${what} not seen in time:\n${this.out}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Resolves once baresip says its account is registered. */
  registered(): Promise<void> {
    return this.until(() => /200 OK|registered successfully/i.test(this.out), "the registration");
  }

  private async control(): Promise<Socket> {
    if (this.ctrl !== undefined) return this.ctrl;
    const deadline = Date.now() + 15_000;
    for (;;) {
      try {
        const socket = await new Promise<Socket>((resolve, reject) => {
          const s = connect(this.ctrlPort, "127.0.0.1", () => resolve(s));
          s.once("error", reject);
        });
        socket.on("data", (b: Buffer) => this.onCtrl(b.toString("utf8")));
        socket.on("error", () => {});
        this.ctrl = socket;
        return socket;
      } catch (e) {
        if (Date.now() > deadline) throw new Error(`baresip's ctrl_tcp did not answer: ${e}\n${this.out}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  /** Netstrings (`len:json,`) from ctrl_tcp. */
  private onCtrl(text: string): void {
    this.ctrlBuffer += text;
    for (;;) {
      const colon = this.ctrlBuffer.indexOf(":");
      if (colon < 0) return;
      const length = Number(this.ctrlBuffer.slice(0, colon));
      if (this.ctrlBuffer.length < colon + 1 + length + 1) return;
      const body = this.ctrlBuffer.slice(colon + 1, colon + 1 + length);
      this.ctrlBuffer = this.ctrlBuffer.slice(colon + 1 + length + 1);
      try {
        this.messages.push(JSON.parse(body) as Record<string, unknown>);
      } catch {
        this.messages.push({ unparsed: body });
      }
    }
  }

  /** Sends one command (`dial`, `sndcode`, `hangup`, …) and resolves with its response. */
  async command(command: string, params = ""): Promise<Record<string, unknown>> {
    const socket = await this.control();
    const token = `t${++this.token}`;
    const json = JSON.stringify({ command, params, token });
    socket.write(`${Buffer.byteLength(json)}:${json},`);
    let response: Record<string, unknown> | undefined;
    await this.until(() => {
      response = this.messages.find((m) => m.response === true && m.token === token);
      return response !== undefined;
    }, `the response to ${command}`);
    return response!;
  }

  /** The events ctrl_tcp reported with `type` (CALL_ESTABLISHED, CALL_CLOSED, …). */
  events(type: string): Array<Record<string, unknown>> {
    return this.messages.filter((m) => m.event === true && m.type === type);
  }

  /** The samples of the newest `dump-*-{dec|enc}.wav` sndfile wrote (dec: heard from the far end). */
  dump(which: "dec" | "enc"): Buffer | undefined {
    const files = readdirSync(this.dir).filter((f) => f.startsWith("dump-") && f.endsWith(`-${which}.wav`));
    files.sort();
    const last = files.at(-1);
    return last === undefined ? undefined : readFileSync(join(this.dir, last));
  }

  /** Quits (SIGTERM, then SIGKILL after 5 s) and removes the directory. */
  async stop(): Promise<void> {
    this.ctrl?.destroy();
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill("SIGTERM");
      const timer = setTimeout(() => this.child.kill("SIGKILL"), 5000);
      await this.exited;
      clearTimeout(timer);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
