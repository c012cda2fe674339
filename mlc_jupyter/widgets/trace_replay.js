// Trace replay widget front end: draws the traits, sends user actions back. No state of its own.

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

// The shared DOM helpers (h) are copied in below from dom.js (see esm.py).

function decisionEditor(model, step) {
  const d = step.decision;
  const send = (value) => model.send({ type: "edit", index: step.index, value });
  if (d.kind === "categorical" || d.kind === "compute_location") {
    const select = h("select", {
      class: "mlc-tr-decision",
      "data-testid": `decision-${step.index}`,
      title: "choose one of the legal values",
      onchange: (e) => send(Number(e.target.value)),
    });
    for (const [value, label] of d.choices) {
      const option = h("option", { value: String(value) }, label);
      if (value === d.value) option.selected = true;
      select.append(option);
    }
    return select;
  }
  const input = h("input", {
    class: "mlc-tr-decision",
    "data-testid": `decision-${step.index}`,
    value: Array.isArray(d.value) ? d.value.join(", ") : JSON.stringify(d.value),
    title: d.kind === "tile" ? `${d.n} factors whose product is ${d.extent}` : "decision",
    size: 14,
  });
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter") send(input.value);
  });
  input.addEventListener("change", () => send(input.value));
  return input;
}

function drawSteps(model, list) {
  list.replaceChildren();
  const steps = model.get("steps");
  const current = model.get("step");
  for (const group of model.get("groups")) {
    const body = h("div", { class: "mlc-tr-group-body" });
    const isPost = group.label === "postprocessing";
    const box = h(isPost ? "details" : "div", { class: "mlc-tr-group" });
    const title = h(isPost ? "summary" : "div", { class: "mlc-tr-group-title" }, group.label);
    box.append(title, body);
    if (isPost && current > group.first) box.open = true;
    for (let i = group.first; i <= group.last; i++) {
      const step = steps[i];
      const row = h(
        "div",
        {
          class:
            "mlc-tr-step" +
            (i + 1 === current ? " mlc-tr-current" : "") +
            (i >= current ? " mlc-tr-later" : ""),
          "data-testid": `step-${i}`,
        },
        h("span", { class: "mlc-tr-num" }, String(i + 1)),
        h("code", { class: "mlc-tr-text", title: step.text, onclick: () => setStep(model, i + 1) }, step.text),
      );
      if (step.decision) row.append(decisionEditor(model, step));
      body.append(row);
    }
    list.append(box);
  }
}

function setStep(model, k) {
  const n = model.get("n_steps");
  model.set("step", Math.max(0, Math.min(n, k)));
  model.save_changes();
}

function drawDiff(pre, text) {
  pre.replaceChildren();
  for (const line of text.split("\n")) {
    let cls = "";
    if (line.startsWith("+") && !line.startsWith("+++")) cls = "mlc-tr-add";
    else if (line.startsWith("-") && !line.startsWith("---")) cls = "mlc-tr-del";
    else if (line.startsWith("@@")) cls = "mlc-tr-hunk";
    pre.append(h("div", { class: cls }, line || " "));
  }
  if (!text) pre.append(h("div", {}, "(this step did not change the module)"));
}

function drawHistory(model, table) {
  table.replaceChildren(
    h("tr", {}, ...["#", "decisions", "latency", "GFLOP/s", "% peak", "correct", ""].map((c) => h("th", {}, c))),
  );
  const picked = model.get("picked");
  for (const row of model.get("history")) {
    const fmt = (x, digits) => (x === null || x === undefined ? "–" : x.toFixed(digits));
    const correct = row.correct === null ? "–" : row.correct ? "yes" : "no";
    const use = h(
      "button",
      { class: "mlc-tr-button", "data-testid": `pick-${row.row}`, onclick: () => model.send({ type: "pick", row: row.row }) },
      row.row === picked ? "picked" : "use",
    );
    table.append(
      h(
        "tr",
        { class: row.row === picked ? "mlc-tr-picked" : "", title: row.error || "" },
        h("td", {}, String(row.row + 1)),
        h("td", {}, row.decisions || "(no sampling)"),
        h("td", {}, row.error ? "failed" : row.latency || "–"),
        h("td", {}, fmt(row.gflops, 1)),
        h("td", {}, fmt(row.peak_pct, 0)),
        h("td", {}, correct),
        h("td", {}, use),
      ),
    );
  }
}

function render({ model, el }) {
  const root = h("div", { class: "mlc-tr" });
  const title = h("div", { class: "mlc-tr-title" });
  const prev = h("button", { class: "mlc-tr-button", "data-testid": "prev", onclick: () => setStep(model, model.get("step") - 1) }, "◀ prev");
  const next = h("button", { class: "mlc-tr-button", "data-testid": "next", onclick: () => setStep(model, model.get("step") + 1) }, "next ▶");
  const slider = h("input", { type: "range", min: "0", class: "mlc-tr-slider", "data-testid": "slider" });
  slider.addEventListener("input", () => setStep(model, Number(slider.value)));
  const label = h("span", { class: "mlc-tr-label", "data-testid": "step-label" });
  const diffToggle = h("input", { type: "checkbox", "data-testid": "diff-toggle" });
  const retime = h("button", { class: "mlc-tr-button", "data-testid": "retime", onclick: () => model.send({ type: "retime" }) }, "Re-time");
  const exportCode = h("button", { class: "mlc-tr-button", onclick: () => model.send({ type: "export", format: "code" }) }, "Export code");
  const exportJson = h("button", { class: "mlc-tr-button", onclick: () => model.send({ type: "export", format: "json" }) }, "Export JSON");
  const reset = h("button", { class: "mlc-tr-button", onclick: () => model.send({ type: "reset" }) }, "Reset");
  // the IR and instructions as the book spells them (T.block) or as TVM 0.27 prints them
  const spelling = h("select", { "data-testid": "spelling", onchange: (e) => {
    model.set("spelling", e.target.value); model.save_changes(); } });
  for (const [v, text] of [["course", "course spelling"], ["tvm", "TVM 0.27 spelling"]]) {
    spelling.append(h("option", { value: v }, text));
  }
  const controls = h(
    "div",
    { class: "mlc-tr-controls" },
    prev, slider, next, label,
    h("label", {}, diffToggle, " diff"),
    retime, exportCode, exportJson, reset, spelling,
  );
  const error = h("div", { class: "mlc-tr-error", "data-testid": "error" });
  const status = h("div", { class: "mlc-tr-status", "data-testid": "status" });
  const list = h("div", { class: "mlc-tr-list" });
  const ir = h("div", { class: "mlc-tr-ir", "data-testid": "ir" });
  const diff = h("pre", { class: "mlc-tr-diff", "data-testid": "diff" });
  const history = h("table", { class: "mlc-tr-history", "data-testid": "history" });
  const roofline = h("div", { class: "mlc-tr-roofline", "data-testid": "roofline" });
  const exported = h("textarea", { class: "mlc-tr-export", readonly: "", rows: "8", "data-testid": "export" });
  root.append(title, controls, error, status, h("div", { class: "mlc-tr-panes" }, list, h("div", { class: "mlc-tr-right" }, ir, diff)), history, roofline, exported);
  el.append(root);

  const draw = () => {
    const n = model.get("n_steps");
    const k = model.get("step");
    title.textContent = `Trace replay · ${model.get("title")}`;
    slider.max = String(n);
    slider.value = String(k);
    label.textContent = `step ${k} / ${n}`;
    prev.disabled = k <= 0;
    next.disabled = k >= n;
    error.textContent = model.get("error");
    error.style.display = model.get("error") ? "" : "none";
    status.textContent = model.get("status");
    ir.innerHTML = model.get("ir_html");
    const showDiff = diffToggle.checked;
    diff.style.display = showDiff ? "" : "none";
    ir.style.display = showDiff ? "none" : "";
    drawDiff(diff, model.get("diff_text"));
    drawSteps(model, list);
    drawHistory(model, history);
    history.style.display = model.get("history").length ? "" : "none";
    roofline.innerHTML = model.get("roofline_html");
    spelling.value = model.get("spelling");
    spelling.style.display = model.get("offer_course_spelling") ? "" : "none";
    exported.value = model.get("export_text");
    exported.style.display = model.get("export_text") ? "" : "none";
  };
  diffToggle.addEventListener("change", draw);
  const names = ["step", "n_steps", "steps", "groups", "ir_html", "diff_text", "error", "status", "history", "roofline_html", "picked", "export_text", "title", "spelling", "offer_course_spelling"];
  for (const name of names) model.on(`change:${name}`, draw);
  draw();
  return () => {
    for (const name of names) model.off(`change:${name}`, draw);
  };
}

export default { render };
