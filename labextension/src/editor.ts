/**
 * CodeMirror 6 pieces for magic cells: TVMScript highlighting, Python indentation that the
 * magic line does not break, and kernel diagnostics (line class, gutter marker, message).
 */
import {
  Extension,
  RangeSet,
  RangeSetBuilder,
  StateEffect,
  StateField
} from '@codemirror/state';
import {
  Decoration,
  DecorationSet,
  EditorView,
  GutterMarker,
  ViewPlugin,
  ViewUpdate,
  WidgetType,
  gutter
} from '@codemirror/view';
import { indentService } from '@codemirror/language';

import { IDiagnostic, detectMagic, editorLine, lineSpans, pythonIndent } from './helpers';

/** Switches read by every editor; changed from the settings. */
export const options = { highlighting: true, markers: true };

/** An effect that makes the highlighter re-read `options`. */
export const refreshEffect = StateEffect.define<null>();

const magicLine = Decoration.line({ class: 'cm-mlc-magic-line' });
const marks: Record<string, Decoration> = {
  'cm-mlc-magic': Decoration.mark({ class: 'cm-mlc-magic' }),
  'cm-mlc-tvm-name': Decoration.mark({ class: 'cm-mlc-tvm-name' }),
  'cm-mlc-block-name': Decoration.mark({ class: 'cm-mlc-block-name' })
};

function highlight(view: EditorView): DecorationSet {
  const doc = view.state.doc;
  if (!options.highlighting || !detectMagic(doc.line(1).text)) {
    return Decoration.none;
  }
  const builder = new RangeSetBuilder<Decoration>();
  for (let n = 1; n <= doc.lines; n++) {
    const line = doc.line(n);
    if (n === 1) {
      builder.add(line.from, line.from, magicLine);
    }
    for (const span of lineSpans(line.text, n)) {
      builder.add(line.from + span.from, line.from + span.to, marks[span.cls]);
    }
  }
  return builder.finish();
}

/** Highlights the whole cell (cells are short) whenever its text or the settings change. */
const highlighter = ViewPlugin.fromClass(
  class {
    decorations: DecorationSet;
    constructor(view: EditorView) {
      this.decorations = highlight(view);
    }
    update(update: ViewUpdate): void {
      const refresh = update.transactions.some(tr => tr.effects.some(e => e.is(refreshEffect)));
      if (update.docChanged || refresh) {
        this.decorations = highlight(update.view);
      }
    }
  },
  { decorations: plugin => plugin.decorations }
);

/** Python indentation for magic cells, where the `%%` line confuses the Python parser. */
const magicIndent = indentService.of((context, pos) => {
  const doc = context.state.doc;
  if (!detectMagic(doc.line(1).text)) {
    return null;
  }
  const current = doc.lineAt(pos);
  let n = current.number - 1;
  while (n >= 1 && doc.line(n).text.trim() === '') {
    n--;
  }
  if (n < 1) {
    return 0;
  }
  return pythonIndent(doc.line(n).text, context.unit, n === 1);
});

/** Set (or clear, with null) the diagnostic shown in one editor. */
export const setDiagnostic = StateEffect.define<IDiagnostic | null>();

class MessageWidget extends WidgetType {
  constructor(readonly text: string) {
    super();
  }
  eq(other: MessageWidget): boolean {
    return other.text === this.text;
  }
  toDOM(): HTMLElement {
    const span = document.createElement('span');
    span.className = 'cm-mlc-diagnostic-message';
    span.textContent = this.text;
    return span;
  }
}

class DiagnosticMarker extends GutterMarker {
  constructor(readonly text: string) {
    super();
  }
  eq(other: DiagnosticMarker): boolean {
    return other.text === this.text;
  }
  toDOM(): Node {
    const span = document.createElement('span');
    span.className = 'cm-mlc-diagnostic-marker';
    span.title = this.text;
    span.textContent = '\u25cf';
    return span;
  }
}

interface IDiagnosticState {
  decorations: DecorationSet;
  markers: RangeSet<GutterMarker>;
}

const empty: IDiagnosticState = { decorations: Decoration.none, markers: RangeSet.empty };

function place(view: { doc: EditorView['state']['doc'] }, d: IDiagnostic): IDiagnosticState {
  const line = view.doc.line(editorLine(d.line, view.doc.lines));
  const text = `${d.ename}: ${d.message}`;
  const lineDeco = Decoration.line({
    class: 'cm-mlc-diagnostic-line',
    attributes: { title: text, 'data-mlc-line': String(d.line) }
  });
  const message = Decoration.widget({ widget: new MessageWidget(text), side: 1 });
  return {
    decorations: Decoration.set([lineDeco.range(line.from), message.range(line.to)]),
    markers: RangeSet.of([new DiagnosticMarker(text).range(line.from)])
  };
}

/** The diagnostic of the editor: set by effects, mapped through edits. */
const diagnosticField = StateField.define<IDiagnosticState>({
  create: () => empty,
  update(value, tr) {
    let next = {
      decorations: value.decorations.map(tr.changes),
      markers: value.markers.map(tr.changes)
    };
    for (const effect of tr.effects) {
      if (effect.is(setDiagnostic)) {
        next = effect.value && options.markers ? place(tr.state, effect.value) : empty;
      }
    }
    return next;
  },
  provide: field => EditorView.decorations.from(field, value => value.decorations)
});

const diagnosticGutter = gutter({
  class: 'cm-mlc-gutter',
  markers: view => view.state.field(diagnosticField).markers
});

/** Everything the extension adds to each cell editor. */
export function mlcEditorExtension(): Extension {
  return [highlighter, magicIndent, diagnosticField, diagnosticGutter];
}
