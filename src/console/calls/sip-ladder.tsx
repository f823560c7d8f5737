/**
 * The SIP dialogue of a SIP call (GetSipInfo) drawn as a ladder: one lane
 * per address, one arrow per message with its first line and time. The
 * drawing is a labelled image; the same messages follow as a table (the
 * accessible form), each with the whole message behind a disclosure. The
 * capture downloads as a .pcap file.
 */
import { useQuery } from "@connectrpc/connect-query";
import { useEffect, useId, useState } from "react";
import {
  type SipInfo,
  SipInfoService,
  type SipMessage,
} from "../../../gen/enfonica/voice/v1beta1/sip_info_pb.js";
import { EmptyState } from "../kit/empty.js";
import { ErrorBanner } from "../kit/errors.js";
import { lastSegment, millis, time } from "../kit/format.js";
import { Table } from "../kit/table.js";
import { POLL_MS } from "./states.js";

const LANE_GAP = 320;
const MARGIN_X = 110;
const HEAD = 44;
const ROW = 40;

function endpoint(ip: string, port: number): string {
  return `${ip}:${port}`;
}

function offset(m: SipMessage): string {
  return `+${((millis(m.offsetDuration) ?? 0) / 1000).toFixed(3)} s`;
}

/** The lanes: every address in the order it first appears. */
export function lanesOf(messages: SipMessage[]): string[] {
  const lanes: string[] = [];
  for (const m of messages) {
    for (const e of [endpoint(m.sourceIp, m.sourcePort), endpoint(m.destinationIp, m.destinationPort)]) {
      if (!lanes.includes(e)) lanes.push(e);
    }
  }
  return lanes;
}

export function SipDialogue({ call, live }: { call: string; live: boolean }) {
  const info = useQuery(
    SipInfoService.method.getSipInfo,
    { name: `${call}/sipInfo` },
    { refetchInterval: live ? POLL_MS : false },
  );
  return (
    <section aria-labelledby="sip-title">
      <h2 id="sip-title">SIP dialogue</h2>
      <ErrorBanner error={info.error} title="Could not get the SIP dialogue" />
      {info.isPending && <p role="status">Loading…</p>}
      {info.data !== undefined &&
        (info.data.messages.length === 0 ? (
          <EmptyState title="No SIP messages yet.">The call has not been placed.</EmptyState>
        ) : (
          <>
            <p>
              <code>Call-ID: {info.data.sipCallId}</code> · {info.data.messages.length} messages from{" "}
              {time(info.data.startTime)} · <PcapLink info={info.data} call={call} />
            </p>
            {info.data.omittedMessageCount > 0 && (
              <p role="status">
                {info.data.omittedMessageCount} later messages were left out of the capture (the operator's
                bound on a call's capture).
              </p>
            )}
            <Ladder messages={info.data.messages} />
            <MessagesTable messages={info.data.messages} />
          </>
        ))}
    </section>
  );
}

/** A link downloading the capture (bytes of the response, as a blob on this page). */
function PcapLink({ info, call }: { info: SipInfo; call: string }) {
  const [url, setUrl] = useState<string | undefined>(undefined);
  useEffect(() => {
    const u = URL.createObjectURL(
      new Blob([new Uint8Array(info.pcap)], { type: "application/vnd.tcpdump.pcap" }),
    );
    setUrl(u);
    return () => URL.revokeObjectURL(u);
  }, [info.pcap]);
  if (url === undefined) return null;
  return (
    <a href={url} download={`call-${lastSegment(call)}.pcap`}>
      Download the capture (.pcap)
    </a>
  );
}

function Ladder({ messages }: { messages: SipMessage[] }) {
  // A plain id: React's (":r1:", "«r1»") is awkward inside url(#...).
  const id = `ladder${useId().replace(/[^A-Za-z0-9_-]/g, "")}`;
  const lanes = lanesOf(messages);
  const width = MARGIN_X * 2 + LANE_GAP * Math.max(lanes.length - 1, 1);
  const height = HEAD + ROW * messages.length + 16;
  const x = (e: string) => MARGIN_X + LANE_GAP * lanes.indexOf(e);
  return (
    <figure className="ladder">
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be focusable to scroll by keyboard */}
      <section className="ladder-scroll" tabIndex={0} aria-label="SIP ladder (scrolls sideways)">
        <svg
          viewBox={`0 0 ${width} ${height}`}
          width={width}
          height={height}
          role="img"
          aria-labelledby={`${id}-title`}
          aria-describedby={`${id}-desc`}
        >
          <title id={`${id}-title`}>SIP ladder</title>
          <desc id={`${id}-desc`}>
            {`${messages.length} messages between ${lanes.join(" and ")}; the table below lists them.`}
          </desc>
          <defs>
            <marker
              id={`${id}-arrow`}
              viewBox="0 0 10 10"
              refX="10"
              refY="5"
              markerWidth="8"
              markerHeight="8"
              orient="auto-start-reverse"
            >
              <path d="M 0 0 L 10 5 L 0 10 z" className="ladder-head" />
            </marker>
          </defs>
          {lanes.map((l) => (
            <g key={l}>
              <text x={x(l)} y={18} textAnchor="middle" className="ladder-lane">
                {l}
              </text>
              <line x1={x(l)} x2={x(l)} y1={26} y2={height - 4} className="ladder-life" />
            </g>
          ))}
          {messages.map((m, i) => {
            const from = x(endpoint(m.sourceIp, m.sourcePort));
            const to = x(endpoint(m.destinationIp, m.destinationPort));
            const y = HEAD + ROW * i + 20;
            const label = m.requestLine.length > 38 ? `${m.requestLine.slice(0, 37)}…` : m.requestLine;
            return (
              // biome-ignore lint/suspicious/noArrayIndexKey: messages have no id and never reorder
              <g key={i}>
                <text x={(from + to) / 2} y={y - 6} textAnchor="middle" className="ladder-label">
                  {label}
                </text>
                <text x={4} y={y + 4} className="ladder-time">
                  {offset(m)}
                </text>
                <line
                  x1={from}
                  x2={to}
                  y1={y}
                  y2={y}
                  className="ladder-arrow"
                  markerEnd={`url(#${id}-arrow)`}
                />
              </g>
            );
          })}
        </svg>
      </section>
    </figure>
  );
}

interface Row {
  i: number;
  m: SipMessage;
}

function MessagesTable({ messages }: { messages: SipMessage[] }) {
  const rows: Row[] = messages.map((m, i) => ({ i, m }));
  return (
    <Table
      caption="SIP messages"
      rows={rows}
      rowKey={(r) => String(r.i)}
      empty="No SIP messages."
      columns={[
        { header: "#", cell: (r) => r.i + 1 },
        { header: "Time", cell: (r) => offset(r.m) },
        { header: "From", cell: (r) => <code>{endpoint(r.m.sourceIp, r.m.sourcePort)}</code> },
        { header: "To", cell: (r) => <code>{endpoint(r.m.destinationIp, r.m.destinationPort)}</code> },
        {
          header: "Message",
          cell: (r) => (
            <details>
              <summary>
                <code>{r.m.requestLine}</code>
              </summary>
              <pre className="body clip">{r.m.data}</pre>
            </details>
          ),
        },
      ]}
    />
  );
}
