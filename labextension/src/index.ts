/**
 * Wiring only: registers the editor extension, follows cell outputs to place kernel
 * diagnostics, and adds the schedule commands. The logic lives in helpers.ts / editor.ts.
 */
import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, showErrorMessage } from '@jupyterlab/apputils';
import { Cell, CodeCell } from '@jupyterlab/cells';
import {
  CodeMirrorEditor,
  EditorExtensionRegistry,
  IEditorExtensionRegistry
} from '@jupyterlab/codemirror';
import {
  INotebookTracker,
  Notebook,
  NotebookActions,
  NotebookPanel
} from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';

import { mlcEditorExtension, options, refreshEffect, setDiagnostic } from './editor';
import {
  IDiagnostic,
  definedModuleName,
  detectMagic,
  diagnosticFromOutputs,
  parsePythonStrRepr,
  usesWorkbench
} from './helpers';

const PLUGIN_ID = 'mlc-jupyter:plugin';
const EXPORT_EXPRESSION =
  '__import__("mlc_jupyter.schedule", fromlist=["last_export"]).last_export()';

namespace CommandIDs {
  export const openStepper = 'mlc-jupyter:open-schedule-stepper';
  export const insertExport = 'mlc-jupyter:insert-exported-steps';
}

function dispatchTo(cell: Cell, effects: ReturnType<typeof setDiagnostic.of>): void {
  void cell.ready.then(() => {
    const editor = cell.editor as CodeMirrorEditor | null;
    editor?.editor.dispatch({ effects });
  });
}

/** Show (or clear) the diagnostic of a code cell from its current outputs. */
function syncDiagnostic(cell: CodeCell): void {
  let found: IDiagnostic | null = null;
  const source = cell.model.sharedModel.getSource();
  // a notebook with such a cell wraps outputs at spaces only (style/index.css), not in a token
  cell.node.classList.toggle('mlc-cell', usesWorkbench(source));
  if (detectMagic(source)) {
    const outputs = [];
    for (let i = 0; i < cell.model.outputs.length; i++) {
      outputs.push(cell.model.outputs.get(i).toJSON());
    }
    found = diagnosticFromOutputs(outputs);
  }
  dispatchTo(cell, setDiagnostic.of(found));
}

const followed = new WeakSet<Cell>();

function followCell(cell: Cell): void {
  if (!(cell instanceof CodeCell) || followed.has(cell)) {
    return;
  }
  followed.add(cell);
  cell.model.outputs.changed.connect(() => syncDiagnostic(cell));
  syncDiagnostic(cell);
}

function followNotebook(notebook: Notebook): void {
  notebook.widgets.forEach(followCell);
  notebook.model?.cells.changed.connect(() => {
    // New widgets are created after the model change; follow them once they exist.
    requestAnimationFrame(() => notebook.widgets.forEach(followCell));
  });
}

function allCells(tracker: INotebookTracker): Cell[] {
  const cells: Cell[] = [];
  tracker.forEach(panel => cells.push(...panel.content.widgets));
  return cells;
}

function applySettings(settings: ISettingRegistry.ISettings, tracker: INotebookTracker): void {
  options.highlighting = settings.get('highlighting').composite !== false;
  options.markers = settings.get('markers').composite !== false;
  // Say on the page which settings are in force (tests wait for it instead of sleeping).
  document.body.dataset.mlcHighlighting = String(options.highlighting);
  document.body.dataset.mlcMarkers = String(options.markers);
  for (const cell of allCells(tracker)) {
    void cell.ready.then(() => {
      (cell.editor as CodeMirrorEditor | null)?.editor.dispatch({
        effects: refreshEffect.of(null)
      });
    });
    if (cell instanceof CodeCell) {
      syncDiagnostic(cell);
    }
  }
}

async function insertCellBelow(panel: NotebookPanel, source: string, run: boolean) {
  const notebook = panel.content;
  NotebookActions.insertBelow(notebook);
  const cell = notebook.activeCell;
  if (!cell) {
    return;
  }
  cell.model.sharedModel.setSource(source);
  if (run) {
    await NotebookActions.run(notebook, panel.sessionContext);
  }
}

async function fetchExport(panel: NotebookPanel): Promise<string> {
  const kernel = panel.sessionContext.session?.kernel;
  if (!kernel) {
    throw new Error('This notebook has no running kernel.');
  }
  const future = kernel.requestExecute({
    code: '',
    silent: true,
    store_history: false,
    user_expressions: { mlc_export: EXPORT_EXPRESSION }
  });
  const reply = await future.done;
  const content = reply.content as { user_expressions?: Record<string, any> };
  const result = content.user_expressions?.mlc_export;
  if (!result || result.status !== 'ok') {
    const why = result ? `${result.ename}: ${result.evalue}` : 'no reply';
    throw new Error(`The kernel could not export the schedule steps (${why}).`);
  }
  return parsePythonStrRepr(String(result.data?.['text/plain'] ?? ''));
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'TVMScript editing, kernel diagnostics and schedule commands for mlc_jupyter.',
  autoStart: true,
  requires: [IEditorExtensionRegistry, INotebookTracker],
  optional: [ICommandPalette, ISettingRegistry],
  activate: (
    app: JupyterFrontEnd,
    registry: IEditorExtensionRegistry,
    tracker: INotebookTracker,
    palette: ICommandPalette | null,
    settingRegistry: ISettingRegistry | null
  ) => {
    registry.addExtension({
      name: 'mlc-jupyter:tvmscript',
      factory: () => EditorExtensionRegistry.createImmutableExtension(mlcEditorExtension())
    });

    tracker.widgetAdded.connect((_, panel) => {
      void panel.revealed.then(() => followNotebook(panel.content));
    });
    tracker.forEach(panel => followNotebook(panel.content));

    const isTirCell = () => {
      const source = tracker.activeCell?.model.sharedModel.getSource() ?? '';
      return definedModuleName(source) !== null;
    };

    app.commands.addCommand(CommandIDs.openStepper, {
      label: 'Open schedule stepper for this module',
      caption: 'Insert a cell below with %mlc_schedule for the module of this %%tir cell and run it',
      isEnabled: isTirCell,
      execute: async () => {
        const panel = tracker.currentWidget;
        const name = definedModuleName(tracker.activeCell?.model.sharedModel.getSource() ?? '');
        if (!panel || !name) {
          return;
        }
        await insertCellBelow(panel, `%mlc_schedule ${name}`, true);
      }
    });

    app.commands.addCommand(CommandIDs.insertExport, {
      label: 'Insert exported schedule steps below',
      caption: 'Insert the schedule steps last exported by the stepper as a new cell',
      isEnabled: () => tracker.currentWidget !== null,
      execute: async () => {
        const panel = tracker.currentWidget;
        if (!panel) {
          return;
        }
        try {
          const steps = await fetchExport(panel);
          if (!steps.trim()) {
            throw new Error(
              'No schedule steps exported yet: press Export in a schedule stepper first.'
            );
          }
          await insertCellBelow(panel, steps, false);
        } catch (error) {
          await showErrorMessage('mlc_jupyter', String((error as Error).message ?? error));
        }
      }
    });

    for (const [rank, command] of [CommandIDs.openStepper, CommandIDs.insertExport].entries()) {
      palette?.addItem({ command, category: 'mlc_jupyter' });
      app.contextMenu.addItem({ command, selector: '.jp-Notebook .jp-Cell', rank: 20 + rank });
    }

    if (settingRegistry) {
      void settingRegistry
        .load(PLUGIN_ID)
        .then(settings => {
          applySettings(settings, tracker);
          settings.changed.connect(() => applySettings(settings, tracker));
        })
        .catch(reason => console.warn('mlc-jupyter: settings not loaded', reason));
    }
  }
};

export default plugin;
