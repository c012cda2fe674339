import {
  codeEnd,
  definedModuleName,
  detectMagic,
  diagnosticFromOutputs,
  editorLine,
  lineSpans,
  parseDiagnostic,
  parsePythonStrRepr,
  pythonIndent,
  usesWorkbench
} from '../src/helpers';

describe('detectMagic', () => {
  it('recognises the three TVMScript cell magics on the first line', () => {
    expect(detectMagic('%%tir\n@T.prim_func\ndef f(): pass')).toBe('tir');
    expect(detectMagic('%%relax Mod -q\n')).toBe('relax');
    expect(detectMagic('%%mlc_schedule MyModule')).toBe('mlc_schedule');
  });

  it('ignores other magics, plain code and magics below the first line', () => {
    expect(detectMagic('%%timeit\nx = 1')).toBeNull();
    expect(detectMagic('%%tirx\n')).toBeNull();
    expect(detectMagic('x = 1\n%%tir')).toBeNull();
    expect(detectMagic('')).toBeNull();
  });
});

describe('parseDiagnostic', () => {
  it('reads the line, column and message of a cell error', () => {
    expect(parseDiagnostic('TVMScriptError', "line 4, column 9: name 'C' is not defined")).toEqual(
      { ename: 'TVMScriptError', line: 4, column: 9, message: "name 'C' is not defined" }
    );
  });

  it('accepts every cell error class and strips terminal colours', () => {
    for (const ename of ['LoopExtentError', 'ScheduleStepError', 'CellError']) {
      expect(parseDiagnostic(ename, '\u001b[31mline 2, column 1: bad\u001b[0m')?.line).toBe(2);
    }
  });

  it('ignores other errors and messages without a location', () => {
    expect(parseDiagnostic('NameError', 'line 4, column 1: x')).toBeNull();
    expect(parseDiagnostic('CellError', 'something went wrong')).toBeNull();
  });

  it('finds the first located error among a cell outputs', () => {
    const outputs = [
      { output_type: 'stream', text: 'hello' },
      { output_type: 'error', ename: 'ValueError', evalue: 'line 1, column 1: no' },
      { output_type: 'error', ename: 'LoopExtentError', evalue: 'line 3, column 5: extent' }
    ];
    expect(diagnosticFromOutputs(outputs)?.line).toBe(3);
    expect(diagnosticFromOutputs([])).toBeNull();
  });
});

describe('editorLine', () => {
  it('keeps cell lines as editor lines and clamps them into the document', () => {
    expect(editorLine(4, 10)).toBe(4);
    expect(editorLine(12, 10)).toBe(10);
    expect(editorLine(0, 10)).toBe(1);
    expect(editorLine(3, 0)).toBe(1);
  });
});

describe('lineSpans', () => {
  it('styles the whole magic line', () => {
    expect(lineSpans('%%tir Mod', 1)).toEqual([{ from: 0, to: 9, cls: 'cm-mlc-magic' }]);
  });

  it('marks T, R, I and sch names and block names, not comments', () => {
    const line = '    with T.block("C"):  # T.grid here';
    const spans = lineSpans(line, 3).map(s => [line.slice(s.from, s.to), s.cls]);
    expect(spans).toEqual([
      ['T.block', 'cm-mlc-tvm-name'],
      ['"C"', 'cm-mlc-block-name']
    ]);
    const other = 'b = sch.get_sblock("Y", func_name="mm"); R.add(x); I.ir_module';
    const names = lineSpans(other, 2).map(s => other.slice(s.from, s.to));
    expect(names).toEqual(['sch.get_sblock', 'R.add', 'I.ir_module']);
    expect(lineSpans("T.sblock('Y_1')", 2).map(s => s.cls)).toContain('cm-mlc-block-name');
  });

  it('finds where a comment starts, outside strings', () => {
    expect(codeEnd('x = "#" # c')).toBe(8);
    expect(codeEnd('x = 1')).toBe(5);
  });
});

describe('pythonIndent', () => {
  it('indents after a colon or an open bracket and dedents after return', () => {
    expect(pythonIndent('def f(A: T.Buffer((8,), "float32")):')).toBe(4);
    expect(pythonIndent('    for i in range(8):  # loop')).toBe(8);
    expect(pythonIndent('    x = f(')).toBe(8);
    expect(pythonIndent('        return x')).toBe(4);
    expect(pythonIndent('    y = 1')).toBe(4);
  });

  it('starts at column 0 after the magic line', () => {
    expect(pythonIndent('%%tir:', 4, true)).toBe(0);
  });
});

describe('definedModuleName', () => {
  it('prefers the name on the magic line', () => {
    expect(definedModuleName('%%tir MyMod -q\nclass Other:')).toBe('MyMod');
  });

  it('falls back to the first class, then the first function', () => {
    expect(definedModuleName('%%tir\n@I.ir_module\nclass Mod:\n    def main(): pass')).toBe('Mod');
    expect(definedModuleName('%%tir -q\n@T.prim_func\ndef mm_relu(A): pass')).toBe('mm_relu');
  });

  it('finds nothing in other cells', () => {
    expect(definedModuleName('class Mod:\n    pass')).toBeNull();
    expect(definedModuleName('%%tir\n')).toBeNull();
  });
});

describe('parsePythonStrRepr', () => {
  it('decodes the repr of a str sent as text/plain', () => {
    expect(parsePythonStrRepr("'sch = tvm.s_tir.Schedule(Mod)\\nb = sch.get_sblock(\"C\")'")).toBe(
      'sch = tvm.s_tir.Schedule(Mod)\nb = sch.get_sblock("C")'
    );
    expect(parsePythonStrRepr('"it\'s \\\\ \\x41\\u00e9"')).toBe("it's \\ A\u00e9");
  });

  it('refuses text that is not a string repr', () => {
    expect(() => parsePythonStrRepr('None')).toThrow('not a Python string');
  });
});

describe('usesWorkbench', () => {
  it('finds mlc_jupyter magics on any line, and the extension being loaded', () => {
    expect(usesWorkbench('%mlc_tune mlp_relax --trials 16')).toBe(true);
    expect(usesWorkbench('x = 1\n%mlc_time f g')).toBe(true);
    expect(usesWorkbench('%%tir --quiet\n@T.prim_func')).toBe(true);
    expect(usesWorkbench('%load_ext mlc_jupyter')).toBe(true);
  });

  it('leaves other cells as JupyterLab shows them', () => {
    expect(usesWorkbench('print("%mlc_tune")')).toBe(false);
    expect(usesWorkbench('%timeit f()\n%%tirade')).toBe(false);
    expect(usesWorkbench('%load_ext autoreload')).toBe(false);
  });
});
