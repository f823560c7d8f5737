/**
 * A SIP user's fields as the API takes them (src/voice/sip-users/model.ts),
 * checked as the user types: each function returns what is wrong, or
 * false. The API checks again.
 */

const USER_ID = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const USERNAME = /^[A-Za-z0-9\-_.!~*'()&=+$,;?/]{1,64}$/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

export function userIdProblem(id: string): string | false {
  return USER_ID.test(id)
    ? false
    : "1 to 63 lower-case letters, digits or dashes, starting and ending with a letter or digit.";
}

export function usernameProblem(username: string): string | false {
  return USERNAME.test(username)
    ? false
    : "1 to 64 letters, digits or -_.!~*'()&=+$,;?/ (what a SIP address's user part allows).";
}

export function passwordProblem(password: string): string | false {
  const length = [...password].length;
  if (length < 8 || length > 128) return "8 to 128 characters.";
  if (CONTROL.test(password)) return "No control characters.";
  return false;
}
