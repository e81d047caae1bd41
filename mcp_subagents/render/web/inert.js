// Text from a model is shown inert: control, bidi and invisible characters become escapes such as \u202e. The same
// characters as the server's render/inert.py (C0 but tab and newline, a CR only outside CRLF, DEL, C1, format
// characters, line and paragraph separators, the other default-ignorable code points but the emoji variation
// selectors, lone surrogates); the server inlines this file where a page asks for it (web/__init__.py).
const NOT_INERT = new RegExp("[\\0-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f-\\x9f\\xad\\u034f\\u0600-\\u0605\\u061c\\u06dd" +
  "\\u070f\\u0890\\u0891\\u08e2\\u115f\\u1160\\u17b4\\u17b5\\u180b-\\u180f\\u200b-\\u200f\\u2028-\\u202e" +
  "\\u2060-\\u206f\\u3164\\ud800-\\udfff\\ufeff\\uffa0\\ufff0-\\ufffb\\u{110bd}\\u{110cd}\\u{13430}-\\u{1343f}" +
  "\\u{1bca0}-\\u{1bca3}\\u{1d173}-\\u{1d17a}\\u{e0000}-\\u{e0fff}]|\\r(?!\\n)", "gu");
function shown(text) {
  return String(text).replace(NOT_INERT, (char) => {
    if (char === "\r") return "\\r";
    const point = char.codePointAt(0);
    const hex = point.toString(16);
    if (point < 0x100) return "\\x" + hex.padStart(2, "0");
    return point < 0x10000 ? "\\u" + hex.padStart(4, "0") : "\\U" + hex.padStart(8, "0");
  });
}
