/**
 * A certificate authority made at test time, and a server certificate it
 * signs for the names a test needs (node:crypto makes the keys; node-forge
 * the X.509 certificates, which node:crypto cannot).
 */
import { generateKeyPairSync, randomBytes } from "node:crypto";
import forge from "node-forge";

export interface TestPki {
  /** The CA certificate (PEM): what clients trust. */
  ca: string;
  /** The server certificate (PEM), signed by the CA. */
  cert: string;
  /** The server's private key (PEM). */
  key: string;
}

function rsa(): { publicKey: forge.pki.PublicKey; privateKey: forge.pki.rsa.PrivateKey; pem: string } {
  const pair = generateKeyPairSync("rsa", {
    modulusLength: 2048,
    publicKeyEncoding: { type: "spki", format: "pem" },
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
  });
  return {
    publicKey: forge.pki.publicKeyFromPem(pair.publicKey),
    privateKey: forge.pki.privateKeyFromPem(pair.privateKey) as forge.pki.rsa.PrivateKey,
    pem: pair.privateKey,
  };
}

function certificate(subject: string, publicKey: forge.pki.PublicKey): forge.pki.Certificate {
  const cert = forge.pki.createCertificate();
  cert.publicKey = publicKey;
  cert.serialNumber = `01${randomBytes(8).toString("hex")}`;
  cert.validity.notBefore = new Date(Date.now() - 3_600_000);
  cert.validity.notAfter = new Date(Date.now() + 24 * 3_600_000);
  cert.setSubject([{ name: "commonName", value: subject }]);
  return cert;
}

/** A CA and a server certificate for `dnsNames` and `ips`. */
export function makeTestPki(dnsNames: string[], ips: string[] = ["127.0.0.1"]): TestPki {
  const caKeys = rsa();
  const ca = certificate("Switchboard test CA", caKeys.publicKey);
  ca.setIssuer(ca.subject.attributes);
  ca.setExtensions([
    { name: "basicConstraints", cA: true, critical: true },
    { name: "keyUsage", keyCertSign: true, cRLSign: true, critical: true },
    { name: "subjectKeyIdentifier" },
  ]);
  ca.sign(caKeys.privateKey, forge.md.sha256.create());

  const serverKeys = rsa();
  const server = certificate(dnsNames[0] ?? "localhost", serverKeys.publicKey);
  server.setIssuer(ca.subject.attributes);
  server.setExtensions([
    { name: "basicConstraints", cA: false },
    { name: "keyUsage", digitalSignature: true, keyEncipherment: true, critical: true },
    { name: "extKeyUsage", serverAuth: true },
    {
      name: "subjectAltName",
      altNames: [...dnsNames.map((value) => ({ type: 2, value })), ...ips.map((ip) => ({ type: 7, ip }))],
    },
  ]);
  server.sign(caKeys.privateKey, forge.md.sha256.create());
  return {
    ca: forge.pki.certificateToPem(ca),
    cert: forge.pki.certificateToPem(server),
    key: serverKeys.pem,
  };
}
