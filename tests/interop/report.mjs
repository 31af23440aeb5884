// What the interop scripts share to report: checks that stop a script at the first failure,
// and values shown short in messages.

export class CheckError extends Error {}

export function check(cond, message) {
  if (!cond) throw new CheckError(message);
}

export function show(value, max = 300) {
  let s;
  try {
    s = typeof value === 'string' ? value : JSON.stringify(value);
    if (s === undefined) s = String(value);
  } catch {
    s = String(value);
  }
  return s.length > max ? `${s.slice(0, max)}…` : s;
}
