import { describe, expect, it } from "vitest";
import { encodeGrpcMessage } from "../../src/transport/grpc-message.js";

describe("encodeGrpcMessage", () => {
  const cases: Array<[string, string, string]> = [
    ["Printable", "country_code: does not match `^[A-Z]{2}$`", "country_code: does not match `^[A-Z]{2}$`"],
    ["Reserved", "a/b?c=d&e#f,g;h@i+j", "a/b?c=d&e#f,g;h@i+j"],
    ["Percent", "100% done", "100%25 done"],
    ["NonAscii", "café ☎", "caf%C3%A9 %E2%98%8E"],
    ["Control", "line\nbreak\ttab", "line%0Abreak%09tab"],
  ];
  for (const [name, message, encoded] of cases) {
    it(`encodes per the gRPC spec: ${name}`, () => {
      expect(encodeGrpcMessage(message)).toBe(encoded);
      // grpc-js decodes with decodeURI, Connect and grpc-go like decodeURIComponent: both read the original.
      expect(decodeURI(encodeGrpcMessage(message))).toBe(message);
      expect(decodeURIComponent(encodeGrpcMessage(message))).toBe(message);
    });
  }
});
