// Stepper front end (schedule steps and pass steps): draws the traits, sends user actions back.
// No state of its own except what is being typed into the interactive form.

// <dom.js> a copy: edit dom.js, then run `python -m mlc_jupyter.widgets.esm`
// Shared by every widget front end: widgets/esm.py copies it into each widget's .js file.

/** An element with attributes (`class`, `on<event>` listeners, the rest as attributes) and children. */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") el.className = value;
    else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value);
  }
  for (const child of children) if (child !== null && child !== undefined) el.append(child);
  return el;
}
// </dom.js>


function button(label, testid, onclick, disabled = false) {
  const b = h("button", { class: "mlc-st-button", "data-testid": testid, onclick }, label);
  b.disabled = disabled;
  return b;
}

function diffView(step, view) {
  if (view === "unified") {
    const pre = h("pre", { class: "mlc-st-diff", "data-testid": "diff" });
    for (const line of (step.unified || "(no change)").split("\n")) {
      const cls = line.startsWith("+") && !line.startsWith("+++") ? "add"
        : line.startsWith("-") && !line.startsWith("---") ? "del" : "";
      pre.append(h("span", { class: `mlc-st-dl ${cls}` }, line + "\n"));
    }
    return pre;
  }
  // Side by side: the step before and this one in two panes of whole lines, row for row; the
  // panes scroll sideways together (the IR pane around them scrolls both down).
  const sides = [["before", 0, "del"], ["after", 1, "add"]].map(([name, column, changed]) => {
    const pre = h("pre", {});
    for (const row of step.side) {
      const text = row[column];
      const tag = row[2];
      const cls = text == null ? "gap" : tag === "replace" ? "replace" : tag === "equal" ? "" : changed;
      pre.append(h("span", { class: `mlc-st-dl ${cls}` }, (text ?? "") + "\n"));
    }
    return h("div", { class: "mlc-st-side-pane", "data-side": name },
      h("div", { class: "mlc-st-side-head" }, name === "before" ? "before this step" : "after it"), pre);
  });
  for (const [pane, other] of [[sides[0], sides[1]], [sides[1], sides[0]]]) {
    pane.addEventListener("scroll", () => { if (other.scrollLeft !== pane.scrollLeft) other.scrollLeft = pane.scrollLeft; });
  }
  return h("div", { class: "mlc-st-side mlc-st-diff", "data-testid": "diff" }, ...sides);
}

function selectOptions(select, values, labels = values) {
  // Refill a <select>, keeping its choice when that value is still offered.
  const kept = select.value;
  select.replaceChildren(...values.map((v, i) => h("option", { value: v }, labels[i])));
  if (values.includes(kept)) select.value = kept;
}

function formValues(container) {
  // What the user has typed or chosen in the fields, by test id (kept across a redraw).
  const values = {};
  for (const input of container.querySelectorAll("[data-testid]")) {
    values[input.dataset.testid] = input.type === "checkbox" ? input.checked : input.value;
  }
  return values;
}

function restoreValues(container, values) {
  for (const input of container.querySelectorAll("[data-testid]")) {
    const value = values[input.dataset.testid];
    if (value === undefined) continue;
    if (input.type === "checkbox") input.checked = value;
    else if (input.tagName !== "SELECT" || [...input.options].some((o) => o.value === value)) {
      input.value = value;
    }
  }
}

function interactiveForm(model) {
  // Built once per view: a trait change refreshes the menus and buttons (update) but keeps
  // what the user typed or chose and has not sent yet.
  const form = h("div", { class: "mlc-st-form" });
  const blockSel = h("select", { "data-testid": "block" });
  const primSel = h("select", { "data-testid": "primitive" });
  const fields = h("span", { class: "mlc-st-fields" });
  let blocks = {};
  let getters = {};
  const loopSelect = (block, testid) => {
    const s = h("select", { "data-testid": testid });
    (blocks[block] || []).forEach((label, i) => s.append(h("option", { value: String(i) }, label)));
    return s;
  };
  const drawFields = () => {
    const typed = formValues(fields);
    fields.replaceChildren();
    getters = {};
    const block = blockSel.value;
    for (const field of model.get("primitives")[primSel.value] || []) {
      if (field === "loop") {
        const s = loopSelect(block, "loop");
        fields.append("loop ", s);
        getters.loop = () => Number(s.value);
      } else if (field === "loops") {
        const boxes = (blocks[block] || []).map((label, i) => {
          const c = h("input", { type: "checkbox", value: String(i), "data-testid": `loops-${i}` });
          fields.append(h("label", {}, c, label));
          return c;
        });
        const order = h("input", { size: 8, placeholder: "order e.g. 0,2,1", "data-testid": "order" });
        fields.append(order);
        getters.loops = () => order.value.trim()
          ? order.value.split(",").map((x) => Number(x.trim()))
          : boxes.filter((c) => c.checked).map((c) => Number(c.value));
      } else if (field === "target_loop") {
        const tb = h("select", { "data-testid": "target-block" });
        selectOptions(tb, Object.keys(blocks));
        let tl = loopSelect(tb.value, "target-loop");
        tb.addEventListener("change", () => {
          const next = loopSelect(tb.value, "target-loop");
          tl.replaceWith(next);
          tl = next;
        });
        fields.append("at ", tb, tl);
        getters.target_block = () => tb.value;
        getters.target_loop = () => Number(tl.value);
      } else {
        const [name, def] = field.split("=");
        const input = h("input", { value: def, size: 14, "data-testid": `arg-${name}` });
        fields.append(` ${name} `, input);
        getters[name] = () => input.value;
      }
    }
    restoreValues(fields, typed);
  };
  blockSel.addEventListener("change", drawFields);
  primSel.addEventListener("change", drawFields);
  const apply = () => {
    const args = {};
    for (const [k, get] of Object.entries(getters)) args[k] = get();
    model.send({ type: "apply", primitive: primSel.value, block: blockSel.value, args });
  };
  const undo = button("Undo", "undo", () => model.send({ type: "undo" }));
  const redo = button("Redo", "redo", () => model.send({ type: "redo" }));
  form.append("block ", blockSel, " ", primSel, " ", fields, button("Apply", "apply", apply), undo,
    redo, button("Export", "export", () => model.send({ type: "export" })));
  selectOptions(primSel, Object.keys(model.get("primitives")));
  const update = () => {
    undo.disabled = model.get("steps").length <= 1;
    redo.disabled = !model.get("can_redo");
    const next = model.get("blocks");
    if (JSON.stringify(next) === JSON.stringify(blocks)) return;  // nothing to redraw
    blocks = next;
    selectOptions(blockSel, Object.keys(blocks));
    drawFields();
  };
  update();
  return { el: form, update };
}

function stepList(model, steps, index, go) {
  // Compiler Explorer's pass list: every step by name; steps that changed nothing are folded.
  // A name too long for the column is cut with an ellipsis; its tooltip has all of it.
  const list = h("ol", { class: "mlc-st-list", "data-testid": "step-list", start: "0" });
  steps.forEach((s, i) => {
    const cls = `mlc-st-item${i === index ? " current" : ""}${s.unchanged ? " unchanged" : ""}`;
    const label = `${i}. ${s.name}${s.unchanged ? " (no change)" : ""}`;
    list.append(h("li", { class: cls, "data-testid": `step-${i}`, onclick: () => go(i), title: label }, label));
  });
  return list;
}

function graphPane(model) {
  const pane = h("div", { class: "mlc-st-graph", "data-testid": "graph" });
  const funcs = model.get("graph_functions");
  const controls = h("div", { class: "mlc-st-controls" });
  if (funcs.length > 1) {
    const sel = h("select", { "data-testid": "graph-function", onchange: (e) => {
      model.set("graph_function", e.target.value); model.save_changes(); } });
    for (const f of funcs) {
      const o = h("option", { value: f }, f);
      if (f === model.get("graph_function")) o.selected = true;
      sel.append(o);
    }
    controls.append("function ", sel);
  }
  const mode = h("select", { "data-testid": "graph-fused", onchange: (e) => {
    model.set("graph_fused", e.target.value); model.save_changes(); } });
  for (const [v, label] of [["auto", "fused: auto"], ["group", "fused: boxes"], ["collapse", "fused: one node"]]) {
    const o = h("option", { value: v }, label);
    if (v === model.get("graph_fused")) o.selected = true;
    mode.append(o);
  }
  controls.append(mode);
  pane.append(controls);
  const drawing = h("div", { class: "mlc-st-graph-drawing", "data-testid": "graph-drawing" });
  if (model.get("graph_svg")) {
    drawing.innerHTML = model.get("graph_svg");  // dot's SVG, built in Python
    controls.append(...zoomControls(drawing));
    const hint = h("span", { class: "mlc-st-note", "data-testid": "graph-hint" }, "");
    controls.append(hint);
    // a graph wider than its frame says so (it is cut by the frame, never by a panel)
    requestAnimationFrame(() => {
      hint.textContent = drawing.scrollWidth > drawing.clientWidth + 1 ? "drag or scroll to see all, or fit" : "";
    });
  } else {
    drawing.append(h("pre", {}, model.get("graph_text") || "(no Relax function to draw)"));
  }
  pane.append(drawing);
  return pane;
}

let graphZoom = null;  // the zoom the user chose, kept while stepping (null: readable size)

function zoomControls(drawing) {
  // A wide graph is drawn at its own size (text readable) in a box that scrolls and pans by
  // dragging; "fit" shrinks it to the box, the buttons zoom in steps.
  const svg = drawing.querySelector("svg");
  if (!svg) return [];
  const box = svg.viewBox && svg.viewBox.baseVal;
  const natural = box && box.width ? box.width : svg.getBoundingClientRect().width || 400;
  const apply = (zoom) => {
    graphZoom = zoom;
    const width = zoom === "fit" ? Math.min(natural, drawing.clientWidth || natural) : natural * zoom;
    svg.setAttribute("width", `${Math.round(width)}px`);
    svg.removeAttribute("height");
    label.textContent = zoom === "fit" ? "fit" : `${Math.round(zoom * 100)}%`;
  };
  const step = (factor) => {
    const now = graphZoom === "fit" ? Math.min(1, (drawing.clientWidth || natural) / natural) : graphZoom || 1;
    apply(Math.max(0.1, Math.min(4, now * factor)));
  };
  const label = h("span", { "data-testid": "graph-zoom" }, "");
  let start = null;
  drawing.addEventListener("mousedown", (e) => {
    start = { x: e.clientX, y: e.clientY, left: drawing.scrollLeft, top: drawing.scrollTop };
    drawing.classList.add("panning");
  });
  drawing.addEventListener("mousemove", (e) => {
    if (!start) return;
    drawing.scrollLeft = start.left - (e.clientX - start.x);
    drawing.scrollTop = start.top - (e.clientY - start.y);
  });
  for (const end of ["mouseup", "mouseleave"]) {
    drawing.addEventListener(end, () => { start = null; drawing.classList.remove("panning"); });
  }
  requestAnimationFrame(() => apply(graphZoom ?? 1));
  return [button("−", "zoom-out", () => step(1 / 1.25)), label, button("+", "zoom-in", () => step(1.25)),
    button("fit", "zoom-fit", () => apply("fit")), button("1:1", "zoom-1", () => apply(1))];
}

function spellingMenu(model) {
  // The IR and traces as the book spells them (T.block) or as TVM 0.27 prints them (T.sblock).
  const sel = h("select", { "data-testid": "spelling", onchange: (e) => {
    model.set("spelling", e.target.value); model.save_changes(); } });
  for (const [v, label] of [["course", "course spelling"], ["tvm", "TVM 0.27 spelling"]]) {
    const o = h("option", { value: v }, label);
    if (v === model.get("spelling")) o.selected = true;
    sel.append(o);
  }
  return sel;
}

function passTools(model, step, index) {
  // Export the steps, or open a TensorIR function of this step in the schedule stepper.
  const row = h("div", { class: "mlc-st-controls" },
    button("Export", "export", () => model.send({ type: "export" })));
  const tir = step.tir || [];
  if (tir.length) {
    const sel = h("select", { "data-testid": "tir-function" });
    for (const f of tir) sel.append(h("option", { value: f }, f));
    row.append(" TensorIR function ", sel, button("schedule it", "schedule",
      () => model.send({ type: "schedule", func: sel.value, index })));
  }
  return row;
}

// Below this width each side of a side-by-side diff would hold under ~40 characters: the
// stepper shows the unified diff instead (and says so), until the cell is wide again.
const SIDE_BY_SIDE_MIN_PX = 700;

function render({ model, el }) {
  const root = h("div", { class: "mlc-st" });
  el.append(root);
  let narrow = false;  // too narrow for side by side (measured, see SIDE_BY_SIDE_MIN_PX)
  let form = null;  // the interactive form survives redraws (see interactiveForm)
  // What the user folded away, kept while stepping: the side panels and step list as a whole
  // (the IR then takes the whole width), or single panels.
  let sidePanels = true;
  const closedPanels = new Set();
  let listWatch = null;  // keeps the current step of the step list in view
  const draw = () => {
    const steps = model.get("steps");
    const last = steps.length - 1;
    const index = Math.max(0, Math.min(model.get("index"), last));
    const step = steps[index];
    const cur = model.get("current");
    const ready = cur && cur.index === index;  // the IR of a newly chosen step is on its way
    const view = model.get("view");
    const go = (i) => { model.set("index", Math.max(0, Math.min(i, last))); model.save_changes(); };
    const slider = h("input", { type: "range", min: "0", max: String(last), value: String(index),
      class: "mlc-st-slider", "data-testid": "slider" });
    slider.addEventListener("input", (e) => go(Number(e.target.value)));
    const viewSel = h("select", { "data-testid": "view", onchange: (e) => {
      model.set("view", e.target.value); model.save_changes(); } });
    for (const [v, label] of model.get("views")) {
      const o = h("option", { value: v }, label);
      if (v === view) o.selected = true;
      viewSel.append(o);
    }
    const controls = h("div", { class: "mlc-st-controls" },
      button("◀ prev", "prev", () => go(index - 1), index === 0), slider,
      button("next ▶", "next", () => go(index + 1), index === last),
      h("span", { "data-testid": "step-label" }, `step ${index} / ${last}`), viewSel,
      model.get("can_time") ? button("time this step", "time", () => model.send({ type: "time", index })) : null,
      button(sidePanels ? "hide panels" : "show panels", "panels", () => { sidePanels = !sidePanels; draw(); }),
      model.get("offer_course_spelling") ? spellingMenu(model) : null);
    const where = step.index
      ? h("div", { class: "mlc-st-source", "data-testid": "source", title: step.source },
        h("b", {}, step.line ? `line ${step.line}: ` : `${step.name}: `), h("code", {}, step.source),
        step.unchanged ? h("span", { class: "mlc-st-unchanged", "data-testid": "unchanged" }, " — no change") : null)
      : h("div", { class: "mlc-st-source", "data-testid": "source" }, "initial module");
    const code = h("div", { class: "mlc-st-code", "data-testid": "ir" });
    const shown = view === "side" && narrow ? "unified" : view;
    if (view === "graph") code.append(graphPane(model));
    else if (!ready) code.append(h("pre", {}, "…"));
    else if (view === "ir") code.innerHTML = cur.html;  // highlighted in Python (escaped there)
    else {
      if (shown !== view) {
        code.append(h("div", { class: "mlc-st-note", "data-testid": "view-note" },
          "side by side needs a wider cell: the unified diff"));
      }
      code.append(diffView(cur, shown));
    }
    const side = h("div", { class: "mlc-st-sidebar", "data-testid": "sidebar" });
    for (const panel of model.get("panels")) {
      // one block per line: a line wider than the panel wraps at its spaces, indented under itself
      const lines = (step[panel.key] || "—").split("\n").map((line) => h("span", { class: "mlc-st-pl" }, line + "\n"));
      const box = h("details", { class: "mlc-st-panel-box" }, h("summary", { class: "mlc-st-h" }, panel.title),
        h("pre", { class: `mlc-st-panel mlc-st-${panel.key}`, "data-testid": panel.key }, ...lines));
      box.open = !closedPanels.has(panel.key);
      box.addEventListener("toggle", () => { if (box.open) closedPanels.delete(panel.key); else closedPanels.add(panel.key); });
      side.append(box);
    }
    const timings = model.get("timings");
    if (timings.length) {
      const max = Math.max(...timings.map((r) => r.ms || 0)) || 1;
      const chart = h("div", { class: "mlc-st-timings", "data-testid": "timings" },
        h("div", { class: "mlc-st-h" }, "latency by step"));
      for (const r of timings) {
        chart.append(h("div", { class: "mlc-st-bar-row" }, `#${r.index} `,
          h("span", { class: "mlc-st-bar", style: `width: ${Math.round(100 * (r.ms || 0) / max)}px` }),
          r.ms == null ? ` failed: ${r.error}` : ` ${r.latency}${r.correct === false ? " (wrong!)" : ""}`));
      }
      side.append(chart);
    }
    const parts = [model.get("title") ? h("div", { class: "mlc-st-title" }, model.get("title")) : null,
      controls];
    if (model.get("interactive")) {
      form = form || interactiveForm(model);
      form.update();
      parts.push(form.el);
    }
    if (model.get("graph_functions") !== undefined) parts.push(passTools(model, step, index));
    if (model.get("error")) parts.push(h("div", { class: "mlc-st-error", "data-testid": "error" }, model.get("error")));
    parts.push(h("div", { class: "mlc-st-status", "data-testid": "status" }, model.get("status")));
    if (model.get("code") && (model.get("interactive") || model.get("graph_functions") !== undefined)) {
      parts.push(h("pre", { class: "mlc-st-export", "data-testid": "code" }, model.get("code")));
    }
    const panes = h("div", { class: `mlc-st-panes${sidePanels ? "" : " no-side no-list"}` }, code, side);
    const list = model.get("show_list") ? stepList(model, steps, index, go) : null;
    if (list) panes.prepend(list);
    parts.push(where, panes);
    root.replaceChildren(...parts.filter(Boolean));
    if (list) {
      // the step on screen stays in view in the list, also when the cell's width changes
      const follow = () => {
        const cur = list.querySelector(".current");
        if (cur && (cur.offsetTop < list.scrollTop
            || cur.offsetTop + cur.offsetHeight > list.scrollTop + list.clientHeight)) {
          list.scrollTop = cur.offsetTop - list.clientHeight / 2;
        }
      };
      if (listWatch) listWatch.disconnect();
      listWatch = new ResizeObserver(follow);
      listWatch.observe(list);
    }
  };
  // a cell that gets narrower than side by side needs (or wide enough again) is drawn again
  const widthWatch = new ResizeObserver(() => {
    const now = root.clientWidth > 0 && root.clientWidth < SIDE_BY_SIDE_MIN_PX;
    if (now !== narrow) {
      narrow = now;
      if (model.get("view") === "side") draw();
    }
  });
  widthWatch.observe(root);
  narrow = root.clientWidth > 0 && root.clientWidth < SIDE_BY_SIDE_MIN_PX;
  draw();
  const traits = ["steps", "index", "current", "view", "error", "status", "blocks", "timings", "code",
    "can_redo", "graph_svg", "graph_text", "graph_functions"];
  for (const name of traits) model.on(`change:${name}`, draw);
  // anywidget calls this when the view goes away: no listener keeps a removed view alive.
  return () => {
    for (const name of traits) model.off(`change:${name}`, draw);
    if (listWatch) listWatch.disconnect();
    widthWatch.disconnect();
  };
}

export default { render };
