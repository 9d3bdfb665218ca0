// Draws each case's transcript as a sequence diagram (SVG) when its <details> is opened:
// the harness's lane on the left, the target's on the right, one arrow per message in the
// order of time, top to bottom, with the time since the target started beside it. Cancels,
// their proofs, and messages after them are marked; HTTP statuses and stream ends are notes
// on the target's side. Clicking an arrow shows the message in full below the diagram.
(function () {
  "use strict";
  var cells = JSON.parse(document.getElementById("transcripts").textContent);
  var FIRST_ROWS = 400;
  var X_TIME = 4, X_H = 150, X_T = 650, X_NOTE = 662, WIDTH = 1010, TOP = 46;

  function esc(s) {
    return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  }
  function cut(s, n) { s = String(s); return s.length > n ? s.slice(0, n - 1) + "\u2026" : s; }
  function parse(text) { try { return JSON.parse(text); } catch (e) { return undefined; } }
  // Ids as written: a string in quotes, so that 1 and "1" read differently.
  function ident(id) { return JSON.stringify(id); }
  function ms(v) { return (Math.round(v * 10) / 10).toFixed(1); }

  // The words an arrow is labelled with: the method, the id, the progress.
  function label(text) {
    var m = parse(text);
    if (m === undefined) { return cut(text, 76); }
    if (Array.isArray(m)) { return "batch of " + m.length; }
    if (m === null || typeof m !== "object") { return cut(text, 76); }
    var p = m.params || {};
    if (typeof m.method === "string") {
      var s = m.method;
      if (m.method === "notifications/progress") {
        s = "progress " + p.progress + (p.total !== undefined ? "/" + p.total : "") + "  token " + ident(p.progressToken);
      } else if (m.method === "notifications/cancelled") {
        s = "cancelled  requestId " + ident(p.requestId) + (p.reason ? "  \u201c" + cut(p.reason, 28) + "\u201d" : "");
      } else if (m.method === "tools/call" && p.name) {
        s += " " + p.name;
      }
      if ("id" in m) { s += "  id " + ident(m.id); }
      return cut(s, 84);
    }
    if ("id" in m) {
      if (m.error) {
        return cut("error " + m.error.code + " " + (m.error.message || "") , 60) + "  id " + ident(m.id);
      }
      var r = m.result || {};
      return "result" + (r.isError ? " (isError)" : "") + "  id " + ident(m.id);
    }
    return cut(text, 76);
  }

  function rowsOf(cell, all) {
    var rows = [];
    cell.entries.forEach(function (e, i) {
      // The headers the harness sent are in the JSON report; the diagram keeps to statuses.
      if (e[1] === "t" && / headers: /.test(e[7])) { return; }
      rows.push({ i: i, at: e[0], dir: e[1], channel: e[2], session: e[3], flags: e[4], line: e[5], mark: e[6], text: e[7] });
    });
    rows.sort(function (a, b) { return a.at - b.at || a.i - b.i; });
    return all ? rows : rows.slice(0, FIRST_ROWS);
  }

  function draw(cell, all) {
    var rows = rowsOf(cell, all);
    var server = cell.role === "server";
    // A recorded session: the client on the left, the server on the right, and each finding
    // beside the message at its trace line.
    var trace = cell.role === "trace";
    var found = {};
    (trace ? cell.findings || [] : []).forEach(function (f) {
      (found[f[0]] = found[f[0]] || []).push(f);
    });
    var out = [];
    var y = TOP, prev = null, ys = {};
    rows.forEach(function (r) {
      var gap = prev === null ? 0 : r.at - prev;
      y += 22 + (gap > 0 ? Math.min(60, 9 * Math.log2(1 + gap / 5)) : 0);
      if (gap >= 100) {
        out.push('<text class="gap" x="' + X_TIME + '" y="' + (y - 20) + '">\u22ee ' + Math.round(gap) + ' ms</text>');
      }
      ys[r.i] = y;
      prev = r.at;
      var cls = "arrow";
      if (r.flags & 1) { cls += " internal"; }
      if (r.mark) { cls += " " + r.mark; }
      if (r.mark === "afterCancel" || r.mark === "late") {
        out.push('<rect class="band ' + r.mark + '" x="' + (X_H - 60) + '" y="' + (y - 16) + '" width="' + (X_T - X_H + 120) + '" height="21" rx="3"/>');
      }
      var hit = '<rect class="hit" data-i="' + r.i + '" x="0" y="' + (y - 16) + '" width="' + WIDTH + '" height="21"><title>' + esc(cut(r.text, 600)) + '</title></rect>';
      out.push('<text class="time" x="' + X_TIME + '" y="' + (y + 3) + '">+' + ms(r.at) + ' ms</text>');
      if (r.dir === "t") {
        var bad = /: [45]\d\d\b/.test(r.text);
        out.push('<circle class="dot" cx="' + X_T + '" cy="' + y + '" r="3"/>');
        out.push('<text class="note' + (bad ? " bad" : "") + '" x="' + X_NOTE + '" y="' + (y + 3) + '">' + esc(cut(r.text, 58)) + '</text>');
        out.push(hit);
        return;
      }
      var sent = r.dir === "s";
      var from = sent ? X_H : X_T, to = sent ? X_T : X_H;
      var head = sent ? -1 : 1;
      if (r.text.charAt(0) === "[") { cls += " marker"; }
      var words = label(r.text);
      if (r.mark === "cancel") { words = "\u2716 " + words; }
      if (r.mark === "proof") {
        // On stdio an answer proves everything sent before it was read; over HTTP the barrier
        // is sent once the grace after the cancel has passed.
        words = "\u2714 " + words + (r.channel ? "  (barrier: the cancel counts as read)" : "  (proof the cancel was read)");
      }
      if (r.mark === "late") { words += "  \u2190 after the proof"; }
      var prefix = "";
      if (r.channel) { prefix += r.channel + " \u00b7 "; }
      if (r.session) { prefix += "session " + r.session + " \u00b7 "; }
      out.push('<g class="' + cls + '">');
      out.push('<line x1="' + from + '" y1="' + y + '" x2="' + to + '" y2="' + y + '"/>');
      out.push('<path class="tip" d="M' + to + ' ' + y + ' l' + (8 * head) + ' -4 l0 8 z"/>');
      out.push('<text x="' + ((X_H + X_T) / 2) + '" y="' + (y - 4) + '" text-anchor="middle">' +
        (prefix ? '<tspan class="chan">' + esc(prefix) + '</tspan>' : '') + esc(words) + '</text>');
      if (r.line) {
        out.push('<text class="line" x="' + (sent ? X_T + 6 : X_H - 6) + '" y="' + (y + 3) + '"' + (sent ? '' : ' text-anchor="end"') + '>line ' + r.line + '</text>');
      }
      (found[r.line] || []).forEach(function (f, k) {
        out.push('<text class="finding ' + esc(f[1]) + '" x="' + (X_T + 60 + 70 * k) + '" y="' + (y + 3) + '">\u2716 ' + esc(f[2]) + '</text>');
      });
      out.push('</g>');
      out.push(hit);
    });
    // Cancel-to-quiet: a bracket on the target's lane from each cancel to the last message about it.
    var brackets = 0;
    (cell.cancels || []).forEach(function (c) {
      if (c.quietEntry === undefined || ys[c.entry] === undefined || ys[c.quietEntry] === undefined) { return; }
      // Side by side when several cancels are drawn.
      var y1 = ys[c.entry], y2 = ys[c.quietEntry], x = X_T + 14 + 8 * (brackets++ % 4);
      out.push('<path class="quiet" d="M' + (x - 6) + ' ' + y1 + ' h6 V' + y2 + ' h-6"/>');
      out.push('<text class="quiettext" x="' + (x + 4) + '" y="' + ((y1 + y2) / 2 + 4) + '">quiet after ' + ms(c.quietMs) + ' ms</text>');
    });
    var height = y + 24;
    var harness = trace ? "client" : server ? "harness (as client)" : "harness (as server)";
    var target = trace ? "server: " + cut(cell.target, 32) : cut(cell.target, 40) + (server ? " (server)" : " (client)");
    var head = '<text class="lanehead" x="' + X_H + '" y="18" text-anchor="middle">' + esc(harness) + '</text>' +
      '<text class="lanehead" x="' + X_T + '" y="18" text-anchor="middle">' + esc(target) + '</text>' +
      '<text class="time" x="' + X_TIME + '" y="18">time</text>' +
      '<line class="lane" x1="' + X_H + '" y1="26" x2="' + X_H + '" y2="' + height + '"/>' +
      '<line class="lane" x1="' + X_T + '" y1="26" x2="' + X_T + '" y2="' + height + '"/>';
    return '<svg xmlns="http://www.w3.org/2000/svg" class="sequence" width="' + WIDTH + '" height="' + height +
      '" viewBox="0 0 ' + WIDTH + ' ' + height + '" role="img" aria-label="sequence diagram">' + head + out.join("") + '</svg>';
  }

  function render(details, all) {
    var box = details.querySelector(".diagram");
    if (!box || (box.dataset.drawn && !all)) { return; }
    var cell = cells[Number(box.dataset.cell)];
    box.dataset.drawn = "1";
    var html = draw(cell, all);
    var total = rowsOf(cell, true).length;
    if (!all && total > FIRST_ROWS) {
      html += '<button type="button" class="more">Draw all ' + total + ' entries (the first ' + FIRST_ROWS + ' are shown)</button>';
    }
    box.innerHTML = html;
    var more = box.querySelector("button.more");
    if (more) { more.addEventListener("click", function () { render(details, true); }); }
    var shown = details.querySelector("pre.message");
    box.querySelectorAll(".hit").forEach(function (hit) {
      hit.addEventListener("click", function () {
        var e = cell.entries[Number(hit.dataset.i)];
        var value = parse(e[7]);
        var where = [e[2] || "stdio"];
        if (e[3]) { where.push("session " + e[3]); }
        var recorded = cell.role === "trace";
        if (e[5]) { where.push((recorded ? "trace line " : "case line ") + e[5]); }
        if (e[4] & 1) { where.push("sent by the harness on its own"); }
        shown.hidden = false;
        shown.textContent = "entry " + hit.dataset.i + " \u00b7 +" + ms(e[0]) + " ms \u00b7 " +
          (recorded ? { s: "client \u2192 server", r: "server \u2192 client", t: "recorder" }
            : { s: "harness \u2192 target", r: "target \u2192 harness", t: "transport" })[e[1]] + " \u00b7 " + where.join(" \u00b7 ") + "\n" +
          (value === undefined ? e[7] : JSON.stringify(value, null, 2));
      });
    });
  }

  function open(id) {
    var target = id && document.getElementById(id);
    if (!target) { return; }
    if (target.tagName === "DETAILS") { target.open = true; render(target); }
    target.scrollIntoView();
  }

  document.querySelectorAll("details.run").forEach(function (details) {
    details.addEventListener("toggle", function () { if (details.open) { render(details); } });
    if (details.open) { render(details); }
  });
  window.addEventListener("hashchange", function () { open(decodeURIComponent(location.hash.slice(1))); });
  if (location.hash) { open(decodeURIComponent(location.hash.slice(1))); }
})();
