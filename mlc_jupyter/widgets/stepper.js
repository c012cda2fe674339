// Schedule stepper front end: draws the traits, sends user actions back. No state of its own
// except what is being typed into the interactive form.

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
  const table = h("table", { class: "mlc-st-side", "data-testid": "diff" });
  for (const [left, right, tag] of step.side) {
    table.append(h("tr", { class: `mlc-st-${tag}` },
      h("td", {}, h("pre", {}, left ?? "")), h("td", {}, h("pre", {}, right ?? ""))));
  }
  return table;
}

function interactiveForm(model, el) {
  const blocks = model.get("blocks");
  const prims = model.get("primitives");
  const form = h("div", { class: "mlc-st-form" });
  const blockSel = h("select", { "data-testid": "block" });
  for (const name of Object.keys(blocks)) blockSel.append(h("option", { value: name }, name));
  const primSel = h("select", { "data-testid": "primitive" });
  for (const name of Object.keys(prims)) primSel.append(h("option", { value: name }, name));
  const fields = h("span", { class: "mlc-st-fields" });
  const loopSelect = (block, testid) => {
    const s = h("select", { "data-testid": testid });
    (blocks[block] || []).forEach((label, i) => s.append(h("option", { value: String(i) }, label)));
    return s;
  };
  let getters = {};
  const drawFields = () => {
    fields.replaceChildren();
    getters = {};
    const block = blockSel.value;
    for (const field of prims[primSel.value] || []) {
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
        for (const name of Object.keys(blocks)) tb.append(h("option", { value: name }, name));
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
  };
  blockSel.addEventListener("change", drawFields);
  primSel.addEventListener("change", drawFields);
  drawFields();
  const apply = () => {
    const args = {};
    for (const [k, get] of Object.entries(getters)) args[k] = get();
    model.send({ type: "apply", primitive: primSel.value, block: blockSel.value, args });
  };
  form.append("block ", blockSel, " ", primSel, " ", fields,
    button("Apply", "apply", apply),
    button("Undo", "undo", () => model.send({ type: "undo" }), model.get("steps").length <= 1),
    button("Redo", "redo", () => model.send({ type: "redo" }), !model.get("can_redo")),
    button("Export", "export", () => model.send({ type: "export" })));
  return form;
}

function render({ model, el }) {
  const root = h("div", { class: "mlc-st" });
  el.append(root);
  const draw = () => {
    const steps = model.get("steps");
    const last = steps.length - 1;
    const index = Math.max(0, Math.min(model.get("index"), last));
    const step = steps[index];
    const view = model.get("view");
    const go = (i) => { model.set("index", Math.max(0, Math.min(i, last))); model.save_changes(); };
    const slider = h("input", { type: "range", min: "0", max: String(last), value: String(index),
      class: "mlc-st-slider", "data-testid": "slider" });
    slider.addEventListener("input", (e) => go(Number(e.target.value)));
    const viewSel = h("select", { "data-testid": "view", onchange: (e) => {
      model.set("view", e.target.value); model.save_changes(); } });
    for (const [v, label] of [["ir", "IR"], ["unified", "unified diff"], ["side", "side by side"]]) {
      const o = h("option", { value: v }, label);
      if (v === view) o.selected = true;
      viewSel.append(o);
    }
    const controls = h("div", { class: "mlc-st-controls" },
      button("◀ prev", "prev", () => go(index - 1), index === 0), slider,
      button("next ▶", "next", () => go(index + 1), index === last),
      h("span", { "data-testid": "step-label" }, `step ${index} / ${last}`), viewSel,
      button("time this step", "time", () => model.send({ type: "time", index })));
    const where = step.index
      ? h("div", { class: "mlc-st-source", "data-testid": "source" },
        h("b", {}, `line ${step.line}: `), h("code", {}, step.source))
      : h("div", { class: "mlc-st-source", "data-testid": "source" }, "initial module");
    const code = h("div", { class: "mlc-st-code", "data-testid": "ir" });
    if (view === "ir") code.innerHTML = step.html;  // highlighted in Python (escaped there)
    else code.append(diffView(step, view));
    const side = h("div", { class: "mlc-st-sidebar" },
      h("div", { class: "mlc-st-h" }, "trace"),
      h("pre", { class: "mlc-st-trace", "data-testid": "trace" }, step.trace || "—"),
      h("div", { class: "mlc-st-h" }, "loop nest"),
      h("pre", { class: "mlc-st-tree", "data-testid": "tree" }, step.tree));
    const timings = model.get("timings");
    if (timings.length) {
      const max = Math.max(...timings.map((r) => r.ms || 0)) || 1;
      const chart = h("div", { class: "mlc-st-timings", "data-testid": "timings" },
        h("div", { class: "mlc-st-h" }, "latency by step"));
      for (const r of timings) {
        chart.append(h("div", { class: "mlc-st-bar-row" }, `#${r.index} `,
          h("span", { class: "mlc-st-bar", style: `width: ${Math.round(100 * (r.ms || 0) / max)}px` }),
          r.ms == null ? ` failed: ${r.error}` : ` ${r.ms.toFixed(4)} ms${r.correct === false ? " (wrong!)" : ""}`));
      }
      side.append(chart);
    }
    const parts = [model.get("title") ? h("div", { class: "mlc-st-title" }, model.get("title")) : null,
      controls];
    if (model.get("interactive")) parts.push(interactiveForm(model, el));
    if (model.get("error")) parts.push(h("div", { class: "mlc-st-error", "data-testid": "error" }, model.get("error")));
    parts.push(h("div", { class: "mlc-st-status", "data-testid": "status" }, model.get("status")));
    if (model.get("interactive") && model.get("code")) {
      parts.push(h("pre", { class: "mlc-st-export", "data-testid": "code" }, model.get("code")));
    }
    parts.push(where, h("div", { class: "mlc-st-panes" }, code, side));
    root.replaceChildren(...parts.filter(Boolean));
  };
  draw();
  for (const name of ["steps", "index", "view", "error", "status", "blocks", "timings", "code", "can_redo"]) {
    model.on(`change:${name}`, draw);
  }
}

export default { render };
