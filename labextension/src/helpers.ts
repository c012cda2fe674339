/**
 * Pure helpers of the extension: no JupyterLab or CodeMirror imports, so Jest tests them
 * directly. Lines are 1-based everywhere, and line 1 of a cell is its magic line.
 */

/** The cell magics whose cells hold TVMScript (or schedule code). */
export const MAGICS = ['tir', 'relax', 'mlc_schedule', 'mlc_passes'] as const;
export type MagicName = (typeof MAGICS)[number];

/** The `ename`s of kernel errors that carry a `line L, column C: message` location. */
export const DIAGNOSTIC_ENAMES = new Set([
  'TVMScriptError',
  'LoopExtentError',
  'ScheduleStepError',
  'PassStepError',
  'CellRaised',
  'GoneError',
  'CellError'
]);

const MAGIC_RE = /^\s*%%(tir|relax|mlc_schedule|mlc_passes)(?=\s|$)/;

/** The magic of a cell (`"tir"`, `"relax"`, `"mlc_schedule"`, `"mlc_passes"`), or null. */
export function detectMagic(text: string): MagicName | null {
  const firstLine = text.split('\n', 1)[0];
  const match = MAGIC_RE.exec(firstLine);
  return match ? (match[1] as MagicName) : null;
}

const WORKBENCH_RE = /^\s*(%%?mlc_\w+|%%(tir|relax)(?=\s|$)|%load_ext\s+mlc_jupyter\b)/m;

/**
 * Whether a cell runs one of mlc_jupyter's magics (or loads it): the outputs of its notebook then
 * break text at spaces only, never inside a name, a path or a word, and scroll a longer token.
 */
export function usesWorkbench(text: string): boolean {
  return WORKBENCH_RE.test(text);
}

/** A kernel error placed on a line of a cell. */
export interface IDiagnostic {
  ename: string;
  line: number;
  column: number;
  message: string;
}

const ANSI_RE = /\u001b\[[0-9;]*[A-Za-z]/g;
const LOCATION_RE = /^line (\d+), column (\d+): ([\s\S]*)$/;

/**
 * The diagnostic in a Jupyter error output, or null when the error carries no cell location.
 *
 * The kernel contract: `ename` names one of the cell error classes and `evalue` starts with
 * `line L, column C: ` (L counts the magic line as line 1).
 */
export function parseDiagnostic(ename: string, evalue: string): IDiagnostic | null {
  if (!DIAGNOSTIC_ENAMES.has(ename)) {
    return null;
  }
  const match = LOCATION_RE.exec(evalue.replace(ANSI_RE, '').trim());
  if (!match) {
    return null;
  }
  return {
    ename,
    line: Number(match[1]),
    column: Number(match[2]),
    message: match[3].trim()
  };
}

/** The first diagnostic among a cell's outputs (nbformat JSON), or null. */
export function diagnosticFromOutputs(
  outputs: ReadonlyArray<{ output_type?: unknown; ename?: unknown; evalue?: unknown }>
): IDiagnostic | null {
  for (const output of outputs) {
    if (output.output_type === 'error') {
      const found = parseDiagnostic(String(output.ename ?? ''), String(output.evalue ?? ''));
      if (found) {
        return found;
      }
    }
  }
  return null;
}

/** The editor line (1-based) to mark for a cell line, kept inside the document. */
export function editorLine(cellLine: number, lineCount: number): number {
  if (lineCount < 1) {
    return 1;
  }
  return Math.min(Math.max(1, Math.floor(cellLine) || 1), lineCount);
}

/** A highlighted span of one line: [from, to) columns (0-based) and its CSS class. */
export interface ISpan {
  from: number;
  to: number;
  cls: 'cm-mlc-magic' | 'cm-mlc-tvm-name' | 'cm-mlc-block-name';
}

const NAME_RE = /\b(T|R|I|sch)\.([A-Za-z_][A-Za-z0-9_]*)/g;
const BLOCK_RE = /\bT\.s?block\(\s*(["'])([^"'\n]*)\1/g;

/** The column where a `#` comment starts (outside string literals), or the line length. */
export function codeEnd(line: string): number {
  let quote: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i];
    if (quote) {
      if (ch === '\\') {
        i++;
      } else if (ch === quote) {
        quote = null;
      }
    } else if (ch === '"' || ch === "'") {
      quote = ch;
    } else if (ch === '#') {
      return i;
    }
  }
  return line.length;
}

/**
 * The TVMScript spans of one line of a magic cell.
 *
 * `lineNumber` is 1-based; line 1 is the magic line, styled as a whole. Elsewhere `T.*`,
 * `R.*`, `I.*` and `sch.*` names and the names of `T.block("...")` / `T.sblock("...")` are
 * marked, outside comments.
 */
export function lineSpans(line: string, lineNumber: number): ISpan[] {
  if (lineNumber === 1) {
    const match = MAGIC_RE.exec(line);
    return match ? [{ from: 0, to: line.length, cls: 'cm-mlc-magic' }] : [];
  }
  const code = line.slice(0, codeEnd(line));
  const spans: ISpan[] = [];
  for (const m of code.matchAll(NAME_RE)) {
    const start = m.index ?? 0;
    spans.push({ from: start, to: start + m[0].length, cls: 'cm-mlc-tvm-name' });
  }
  for (const m of code.matchAll(BLOCK_RE)) {
    const start = (m.index ?? 0) + m[0].length - m[2].length - 1;
    spans.push({ from: start - 1, to: start + m[2].length + 1, cls: 'cm-mlc-block-name' });
  }
  return spans.sort((a, b) => a.from - b.from || a.to - b.to);
}

const DEDENT_RE = /^\s*(return|pass|break|continue|raise)\b/;

/**
 * The indentation (in columns) of a new line after `previous` in Python code.
 *
 * One unit more after a line ending in `:` (outside comments) or an open bracket, one unit
 * less after `return`/`pass`/`break`/`continue`/`raise`, otherwise the same. After the
 * magic line (and blank cells) it is 0.
 */
export function pythonIndent(previous: string, unit = 4, isMagicLine = false): number {
  if (isMagicLine) {
    return 0;
  }
  const indent = previous.length - previous.trimStart().length;
  const code = previous.slice(0, codeEnd(previous)).trimEnd();
  if (code.endsWith(':') || /[([{]$/.test(code)) {
    return indent + unit;
  }
  if (DEDENT_RE.test(code)) {
    return Math.max(0, indent - unit);
  }
  return indent;
}

/**
 * The name of the module a `%%tir` / `%%relax` cell defines, for `%mlc_schedule NAME`.
 *
 * The positional name on the magic line wins; otherwise the first top-level `class`
 * (an `@I.ir_module`), then the first top-level `def` (a `@T.prim_func`).
 */
export function definedModuleName(text: string): string | null {
  const lines = text.split('\n');
  const magic = /^\s*%%(?:tir|relax)\s+(.*)$/.exec(lines[0] ?? '');
  if (magic) {
    const name = magic[1].split(/\s+/).find(word => /^[A-Za-z_][A-Za-z0-9_]*$/.test(word));
    if (name) {
      return name;
    }
  }
  if (!/^\s*%%(tir|relax)(?=\s|$)/.test(lines[0] ?? '')) {
    return null;
  }
  for (const pattern of [/^class\s+([A-Za-z_]\w*)/, /^def\s+([A-Za-z_]\w*)/]) {
    for (const line of lines.slice(1)) {
      const found = pattern.exec(line);
      if (found) {
        return found[1];
      }
    }
  }
  return null;
}

const SIMPLE_ESCAPES: Record<string, string> = {
  '\\': '\\',
  "'": "'",
  '"': '"',
  n: '\n',
  t: '\t',
  r: '\r',
  a: '\x07',
  b: '\b',
  f: '\f',
  v: '\v',
  '0': '\0'
};

/**
 * The value of a Python `str` from its `repr()` (what `user_expressions` send as
 * `text/plain`). Throws an Error when the text is not a string repr.
 */
export function parsePythonStrRepr(repr: string): string {
  const text = repr.trim();
  const quote = text[0];
  if (text.length < 2 || (quote !== "'" && quote !== '"') || text[text.length - 1] !== quote) {
    throw new Error(`not a Python string: ${text.slice(0, 40)}`);
  }
  const body = text.slice(1, -1);
  let out = '';
  for (let i = 0; i < body.length; i++) {
    const ch = body[i];
    if (ch !== '\\') {
      out += ch;
      continue;
    }
    const next = body[++i];
    const width = next === 'x' ? 2 : next === 'u' ? 4 : next === 'U' ? 8 : 0;
    if (width) {
      out += String.fromCodePoint(parseInt(body.slice(i + 1, i + 1 + width), 16));
      i += width;
    } else if (next in SIMPLE_ESCAPES) {
      out += SIMPLE_ESCAPES[next];
    } else {
      out += '\\' + next;
    }
  }
  return out;
}
