// fifoq console. Plain JavaScript, no framework, no build step: a hash
// router, a poller that samples the queues' counters for the live charts,
// and one function per page. The server's JSON API is under ./api/.
"use strict";

(function () {
  const API = "api/";
  const WINDOW_MS = 5 * 60 * 1000; // how much history the charts show
  const MIN_SPAN_MS = 10 * 1000; // the narrowest time window of a chart
  const TICK_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300].map((s) => s * 1000);
  const SVGNS = "http://www.w3.org/2000/svg";

  // ---------------------------------------------------------------- DOM

  // h builds an element: h("a", {class: "x", href: "#", onclick: fn}, kids...).
  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    setAttrs(el, attrs);
    append(el, kids);
    return el;
  }

  // s builds an SVG element.
  function s(tag, attrs, ...kids) {
    const el = document.createElementNS(SVGNS, tag);
    setAttrs(el, attrs);
    append(el, kids);
    return el;
  }

  function setAttrs(el, attrs) {
    if (!attrs) return;
    for (const [k, v] of Object.entries(attrs)) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith("on") && typeof v === "function") {
        el.addEventListener(k.slice(2), v);
        (el._on ||= {})[k.slice(2)] = v;
      }
      else if (k === "text") el.textContent = v;
      else if (k === "value") el.value = v;
      else el.setAttribute(k, v === true ? "" : String(v));
    }
  }

  function append(el, kids) {
    for (const k of kids.flat(Infinity)) {
      if (k === null || k === undefined || k === false) continue;
      el.append(k instanceof Node ? k : document.createTextNode(String(k)));
    }
  }

  function clear(el) {
    while (el.firstChild) el.removeChild(el.firstChild);
    return el;
  }

  // put appends children as h does (strings, nodes, nested arrays; null
  // and false skipped) and returns el.
  function put(el, ...kids) {
    append(el, kids);
    return el;
  }

  // patch makes el's children kids, as put(clear(el), ...kids) would, but
  // keeps each node already in a place whose new node is of the same kind
  // and brings its attributes, listeners (those given to h) and children up
  // to date. A view that a live refresh rebuilds so keeps its elements: a
  // click whose press and release straddle a refresh (a person holds a
  // button about a tenth of a second; the page may refresh every 0.3 s)
  // still reaches the element pressed, where a new one in its place would
  // get no click at all. For views without form fields: a field's typed
  // value is not an attribute, and is left as it is.
  function patch(el, ...kids) {
    const want = [];
    for (const k of kids.flat(Infinity)) {
      if (k === null || k === undefined || k === false) continue;
      want.push(k instanceof Node ? k : document.createTextNode(String(k)));
    }
    want.forEach((next, i) => {
      const old = el.childNodes[i];
      if (!old) el.appendChild(next);
      else if (old.nodeName !== next.nodeName || old.namespaceURI !== next.namespaceURI) el.replaceChild(next, old);
      else if (old.nodeType !== Node.ELEMENT_NODE) {
        if (old.nodeValue !== next.nodeValue) old.nodeValue = next.nodeValue;
      } else {
        for (const a of [...old.attributes]) if (!next.hasAttribute(a.name)) old.removeAttribute(a.name);
        for (const a of next.attributes) if (old.getAttribute(a.name) !== a.value) old.setAttribute(a.name, a.value);
        for (const [type, fn] of Object.entries(old._on || {})) old.removeEventListener(type, fn);
        for (const [type, fn] of Object.entries(next._on || {})) old.addEventListener(type, fn);
        old._on = next._on;
        patch(old, [...next.childNodes]);
      }
    });
    while (el.childNodes.length > want.length) el.removeChild(el.lastChild);
    return el;
  }

  function icon(name) {
    const paths = {
      info: "M8 1.5a6.5 6.5 0 1 0 0 13 6.5 6.5 0 0 0 0-13Zm0 3.2a.9.9 0 1 1 0 1.8.9.9 0 0 1 0-1.8ZM7.2 7.5h1.6v4.2H7.2z",
      send: "M1.5 8 14.5 1.5 11 14.5 7.6 9.2 1.5 8Zm6.1 1.2L14.5 1.5",
      trash: "M3 4.5h10M6.5 4.5V3h3v1.5M4.5 4.5l.6 9h5.8l.6-9",
      refresh: "M13.5 8a5.5 5.5 0 1 1-1.6-3.9M13.5 2v3.5H10",
      copy: "M5.5 5.5h8v8h-8zM10.5 5.5v-3h-8v8h3",
      eye: "M1.5 8S4 3.5 8 3.5 14.5 8 14.5 8 12 12.5 8 12.5 1.5 8 1.5 8Zm6.5 2a2 2 0 1 0 0-4 2 2 0 0 0 0 4Z",
      undo: "M5 3.5 2 6.5l3 3M2.5 6.5h7a4 4 0 0 1 0 8H6",
    };
    const filled = name === "info";
    return s("svg", { class: "icon", viewBox: "0 0 16 16", "aria-hidden": "true" },
      s("path", { d: paths[name], fill: filled ? "currentColor" : "none", stroke: filled ? "none" : "currentColor", "stroke-width": "1.5", "stroke-linecap": "round", "stroke-linejoin": "round" }));
  }

  // ---------------------------------------------------------- formatting

  const intFmt = new Intl.NumberFormat("en-US");
  const fmtInt = (n) => intFmt.format(n);

  function fmtCompact(n) {
    if (n < 10000) return fmtInt(Math.round(n));
    const units = [["k", 1e3], ["M", 1e6], ["G", 1e9]];
    let out = fmtInt(n);
    for (const [u, v] of units) if (n >= v) out = (n / v).toFixed(n / v < 100 ? 1 : 0).replace(/\.0$/, "") + u;
    return out;
  }

  function fmtRate(r) {
    if (r === null || r === undefined || !isFinite(r)) return "–";
    if (r === 0) return "0";
    if (r < 0.1) return "<0.1";
    if (r < 10) return r.toFixed(1);
    return fmtCompact(r);
  }

  function fmtBytes(n) {
    if (n < 1024) return n + " B";
    if (n < 1024 * 1024) return +(n / 1024).toFixed(n < 10240 ? 1 : 0) + " KiB";
    if (n < 1024 ** 3) return +(n / 1024 / 1024).toFixed(1) + " MiB";
    return +(n / 1024 ** 3).toFixed(1) + " GiB";
  }

  // fmtDur writes a duration in ms the way an operator reads it: 850ms,
  // 42s, 3m 12s, 5h 4m, 4d 2h.
  function fmtDur(ms) {
    if (ms < 0) ms = 0;
    if (ms < 1000) return Math.round(ms) + "ms";
    const sec = Math.floor(ms / 1000);
    if (sec < 60) return sec + "s";
    const m = Math.floor(sec / 60), h_ = Math.floor(m / 60), d = Math.floor(h_ / 24);
    if (m < 60) return m + "m" + (sec % 60 ? " " + (sec % 60) + "s" : "");
    if (h_ < 24) return h_ + "h" + (m % 60 ? " " + (m % 60) + "m" : "");
    return d + "d" + (h_ % 24 ? " " + (h_ % 24) + "h" : "");
  }

  // fmtSeconds writes an attribute in seconds: "30 s", "4 days (345,600 s)".
  function fmtSeconds(v) {
    const n = Number(v);
    if (!isFinite(n)) return v;
    if (n < 60) return n + " s";
    const parts = [];
    let rest = n;
    for (const [unit, size] of [["day", 86400], ["hour", 3600], ["min", 60], ["s", 1]]) {
      const k = Math.floor(rest / size);
      rest -= k * size;
      if (k) parts.push(k + " " + unit + (k > 1 && unit !== "min" && unit !== "s" ? "s" : ""));
    }
    return parts.join(" ") + " (" + fmtInt(n) + " s)";
  }

  const pad2 = (n) => String(n).padStart(2, "0");
  function fmtClock(ms) {
    const d = new Date(ms);
    return pad2(d.getHours()) + ":" + pad2(d.getMinutes()) + ":" + pad2(d.getSeconds());
  }
  function fmtDate(ms) {
    const d = new Date(ms);
    return d.getFullYear() + "-" + pad2(d.getMonth() + 1) + "-" + pad2(d.getDate()) + " " + fmtClock(ms);
  }

  function zeroOr(n, text) {
    return n === 0 ? h("span", { class: "zero" }, "0") : text || fmtInt(n);
  }

  // shortHandle shows the end of a receipt handle, which is what differs.
  const shortHandle = (r) => (r.length > 14 ? "…" + r.slice(-12) : r);

  // ----------------------------------------------------------------- API

  let session = null;

  class APIError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  async function call(method, path, body) {
    const opts = { method, headers: { Accept: "application/json" }, credentials: "same-origin" };
    if (method !== "GET") {
      opts.headers["Content-Type"] = "application/json";
      opts.headers["X-CSRF-Token"] = session ? session.csrfToken : "";
      opts.body = JSON.stringify(body || {});
    }
    let res;
    try {
      res = await fetch(API + path, opts);
    } catch (e) {
      throw new APIError(0, "NetworkError", "The server cannot be reached.");
    }
    let data = null;
    try {
      data = await res.json();
    } catch (e) {
      data = null;
    }
    if (!res.ok) {
      const err = data && data.error ? data.error : { code: "HTTP" + res.status, message: res.status + " " + res.statusText };
      if (res.status === 401 && err.code === "SignInRequired" && path !== "login") signedOut();
      throw new APIError(res.status, err.code, err.message);
    }
    return data;
  }

  const qpath = (name, rest) => "queues/" + encodeURIComponent(name) + (rest || "");

  // -------------------------------------------------------------- toasts

  function toast(title, text, kind) {
    const el = h("div", { class: "toast" + (kind === "error" ? " error" : ""), role: kind === "error" ? "alert" : "status", title: "Click to dismiss", onclick: () => el.remove() }, h("b", {}, title), text ? h("span", {}, text) : null);
    const box = document.getElementById("toasts");
    put(box, el);
    while (box.children.length > 3) box.firstChild.remove();
    setTimeout(() => el.remove(), kind === "error" ? 8000 : 4000);
  }
  const toastError = (title, err) => toast(title, err.message + (err.code && !err.code.startsWith("HTTP") ? " (" + err.code + ")" : ""), "error");

  async function copy(text) {
    try {
      await navigator.clipboard.writeText(text);
      toast("Copied", text);
    } catch (e) {
      window.prompt("Copy:", text);
    }
  }

  // -------------------------------------------------------------- samples

  // The store keeps, for the charts, a sample of every queue's figures at
  // each poll of the last WINDOW_MS; rates are the counters' differences
  // between two samples, over the server's clock.
  const store = { latest: null, samples: [], listeners: new Set() };

  function ingest(data) {
    const figures = new Map();
    for (const q of data.queues) figures.set(q.name, { c: q.counters, v: q.visible, n: q.notVisible, d: q.delayed });
    store.samples.push({ t: data.now, q: figures });
    while (store.samples.length > 2 && store.samples[0].t < data.now - WINDOW_MS - 10000) store.samples.shift();
    store.latest = data;
    for (const fn of store.listeners) fn(data);
  }

  // series returns the points of one queue (or of all queues, name null):
  // t, and per point the rates and depths.
  function series(name) {
    const out = [];
    let prev = null;
    for (const smp of store.samples) {
      const f = figuresOf(smp, name);
      if (f && prev && smp.t > prev.t) {
        const dt = (smp.t - prev.t) / 1000;
        const rate = (k) => Math.max(0, (f.c[k] - prev.f.c[k]) / dt);
        out.push({ t: smp.t, sent: rate("sent"), received: rate("received"), deleted: rate("deleted"), visible: f.v, inflight: f.n, delayed: f.d });
      }
      prev = f ? { t: smp.t, f } : null;
    }
    return out;
  }

  function figuresOf(smp, name) {
    if (name !== null) return smp.q.get(name) || null;
    const sum = { c: { sent: 0, received: 0, deleted: 0 }, v: 0, n: 0, d: 0 };
    for (const f of smp.q.values()) {
      sum.c.sent += f.c.sent;
      sum.c.received += f.c.received;
      sum.c.deleted += f.c.deleted;
      sum.v += f.v;
      sum.n += f.n;
      sum.d += f.d;
    }
    return sum;
  }

  // latestRates returns the rates of the newest point of a queue's series.
  function latestRates(name) {
    const pts = series(name);
    return pts.length ? pts[pts.length - 1] : null;
  }

  // --------------------------------------------------------------- poller

  const REFRESH_CHOICES = [1000, 2000, 5000, 10000, 0];
  const poller = { ms: savedRefresh(), timer: null, busy: false };

  function savedRefresh() {
    let v = NaN;
    try {
      v = parseInt(localStorage.getItem("fifoq.refresh"), 10);
    } catch (e) {}
    return isFinite(v) && (v === 0 || v >= 250) ? v : 2000;
  }

  async function poll() {
    clearTimeout(poller.timer);
    poller.timer = null;
    if (!session || !session.signedIn) return;
    if (!document.hidden && !poller.busy) {
      poller.busy = true;
      try {
        ingest(await call("GET", "queues"));
        setLive(poller.ms ? "live" : "paused");
      } catch (e) {
        setLive("error", e.message);
      } finally {
        poller.busy = false;
      }
    }
    if (poller.ms > 0 && session && session.signedIn) poller.timer = setTimeout(poll, poller.ms);
  }

  function setLive(state, why) {
    const el = document.getElementById("live");
    if (!el) return;
    el.className = "live " + (state === "live" ? "" : state);
    el.title = why || "";
    el.lastChild.textContent = state === "error" ? "Disconnected" : state === "paused" ? "Paused" : "Live";
  }

  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && poller.ms > 0) poll();
  });

  // ---------------------------------------------------------------- chart

  // chart draws a live time series in SVG: the last WINDOW_MS, one line
  // per key, a tooltip under the pointer. update() redraws it.
  function chart(keys, labels, unit) {
    const wrap = h("div", { class: "chart" });
    const svg = s("svg", { role: "img" });
    const tip = h("div", { class: "chart-tip", hidden: true });
    put(wrap, svg, tip);
    let points = [];
    let now = Date.now();
    let hover = null;

    const fmt = (v) => (unit === "/s" ? fmtRate(v) + "/s" : fmtCompact(v));

    // niceMax returns the top of the y axis: four steps of a round size
    // (1, 2, 2.5 or 5 times a power of ten; whole numbers for counts).
    function niceMax(v) {
      const minStep = unit === "/s" ? 0.25 : 1;
      if (v <= 0) return 4 * minStep;
      const raw = v / 4;
      const p = Math.pow(10, Math.floor(Math.log10(raw)));
      for (const m of [1, 2, 2.5, 3, 5, 10]) {
        const step = m * p;
        if (step >= raw && step >= minStep && (unit === "/s" || Number.isInteger(step))) return 4 * step;
      }
      return 40 * p;
    }

    function draw() {
      const W = Math.max(wrap.clientWidth - 10, 200);
      const H = Math.max(wrap.clientHeight - 6, 100);
      const L = 46, R = 6, T = 6, B = 20;
      const iw = W - L - R, ih = H - T - B;
      clear(svg);
      svg.setAttribute("width", W);
      svg.setAttribute("height", H);
      // The window is the last WINDOW_MS, or less while the console has
      // not been open that long, so that a fresh chart fills its width.
      const span = Math.min(WINDOW_MS, Math.max(MIN_SPAN_MS, points.length ? now - points[0].t : 0));
      const t0 = now - span;
      const x = (t) => L + ((t - t0) / span) * iw;
      let maxV = 0;
      for (const p of points) for (const k of keys) maxV = Math.max(maxV, p[k]);
      const top = niceMax(maxV);
      const y = (v) => T + ih - (v / top) * ih;
      for (let i = 0; i <= 4; i++) {
        const v = (top / 4) * i;
        const yy = Math.round(y(v)) + 0.5;
        put(svg, s("line", { class: "gridline", x1: L, x2: W - R, y1: yy, y2: yy }));
        const label = v >= 10000 ? fmtCompact(v) : String(+v.toFixed(2));
        put(svg, s("text", { class: "axis", x: L - 8, y: yy + 3.5, "text-anchor": "end" }, label));
      }
      // Time labels at round times, about six across, in local time.
      const step = TICK_STEPS.find((st) => span / st <= 6) || 60000;
      for (let t = Math.ceil(t0 / step) * step; t <= now; t += step) {
        if (x(t) < L + 16) continue;
        const label = step < 60000 ? fmtClock(t) : fmtClock(t).slice(0, 5);
        put(svg, s("text", { class: "axis", x: x(t), y: H - 4, "text-anchor": "middle" }, label));
      }
      const visible = points.filter((p) => p.t >= t0);
      if (visible.length < 2) {
        put(svg, s("text", { class: "empty", x: L + iw / 2, y: T + ih / 2, "text-anchor": "middle" }, visible.length ? "Collecting samples…" : "Waiting for data…"));
      } else {
        // The first series gets a shaded area; the others are lines over it.
        keys.forEach((k, i) => {
          let line = "";
          for (const p of visible) line += (line ? "L" : "M") + x(p.t).toFixed(1) + " " + y(p[k]).toFixed(1);
          if (i === 0) {
            const area = line + "L" + x(visible[visible.length - 1].t).toFixed(1) + " " + y(0) + "L" + x(visible[0].t).toFixed(1) + " " + y(0) + "Z";
            put(svg, s("path", { class: "area " + k, d: area }));
          }
          put(svg, s("path", { class: "line " + k, d: line, "data-series": k }));
        });
      }
      if (hover !== null && visible.length) {
        let best = visible[0];
        for (const p of visible) if (Math.abs(x(p.t) - hover) < Math.abs(x(best.t) - hover)) best = p;
        const cx = x(best.t);
        put(svg, s("line", { class: "cursor", x1: cx, x2: cx, y1: T, y2: T + ih }));
        for (const k of keys) put(svg, s("circle", { class: "line " + k, cx, cy: y(best[k]), r: 3 }));
        put(clear(tip), h("div", { class: "t" }, fmtClock(best.t)), keys.map((k, i) => h("div", { class: "r" }, h("span", { class: "swatch " + k }), labels[i], h("b", {}, fmt(best[k])))));
        tip.hidden = false;
        const tw = tip.offsetWidth;
        tip.style.left = (cx + 14 + tw > W ? cx - tw - 14 : cx + 14) + "px";
      } else {
        tip.hidden = true;
      }
    }

    svg.addEventListener("mousemove", (e) => {
      hover = e.clientX - svg.getBoundingClientRect().left;
      draw();
    });
    svg.addEventListener("mouseleave", () => {
      hover = null;
      draw();
    });
    const ro = new ResizeObserver(() => draw());
    ro.observe(wrap);
    return {
      el: wrap,
      update(pts, t) {
        points = pts;
        now = t;
        draw();
      },
      destroy() {
        ro.disconnect();
      },
    };
  }

  function legend(keys, labels) {
    const vals = {};
    const el = h("div", { class: "legend" }, keys.map((k, i) => h("span", {}, h("span", { class: "swatch " + k }), labels[i], (vals[k] = h("b", {}, "–")))));
    return { el, set: (k, text) => (vals[k].textContent = text) };
  }

  // ----------------------------------------------------------------- shell

  let view = null; // the current page: {destroy()}
  let main = null; // the element pages draw into

  function setView(v) {
    if (view && view.destroy) view.destroy();
    view = v;
  }

  function themeLabel() {
    const t = document.documentElement.getAttribute("data-theme") || "auto";
    return { auto: "Theme: auto", light: "Theme: light", dark: "Theme: dark" }[t];
  }

  function cycleTheme(btn) {
    const order = ["auto", "light", "dark"];
    const cur = document.documentElement.getAttribute("data-theme") || "auto";
    const next = order[(order.indexOf(cur) + 1) % order.length];
    if (next === "auto") document.documentElement.removeAttribute("data-theme");
    else document.documentElement.setAttribute("data-theme", next);
    try {
      localStorage.setItem("fifoq.theme", next);
    } catch (e) {}
    btn.textContent = themeLabel();
  }

  function shell() {
    const refresh = h("select", { id: "refresh", title: "How often the console refreshes", onchange: (e) => setRefresh(parseInt(e.target.value, 10)) });
    const choices = REFRESH_CHOICES.includes(poller.ms) ? REFRESH_CHOICES : [poller.ms, ...REFRESH_CHOICES];
    for (const ms of choices) put(refresh, h("option", { value: ms, selected: ms === poller.ms }, ms ? "Every " + ms / 1000 + "s" : "Paused"));
    const themeBtn = h("button", { class: "tb-btn", id: "theme", type: "button", onclick: () => cycleTheme(themeBtn) }, themeLabel());
    const bar = h("header", { class: "topbar" },
      h("a", { class: "brand", href: "#/queues" }, h("img", { src: "static/icon.svg", alt: "" }), "fifoq", h("small", {}, "console")),
      h("nav", { class: "topnav" }, h("a", { href: "#/queues", class: "active", id: "nav-queues" }, "Queues"), h("a", { href: "#/cluster", id: "nav-cluster" }, "Cluster")),
      h("div", { class: "spacer" }),
      h("span", { class: "live", id: "live" }, h("span", { class: "dot" }), h("span", {}, "Live")),
      refresh,
      h("span", { class: "who" }, session.accessKeyId ? [h("b", {}, session.accessKeyId), " · "] : null, "account ", h("b", {}, session.account), " · ", session.region),
      themeBtn,
      session.authRequired ? h("button", { class: "tb-btn", id: "signout", type: "button", onclick: signOut }, "Sign out") : null,
    );
    main = h("main", { class: "page" });
    put(clear(document.getElementById("app")), bar, main);
  }

  function setRefresh(ms) {
    poller.ms = ms;
    try {
      localStorage.setItem("fifoq.refresh", String(ms));
    } catch (e) {}
    if (ms > 0) poll();
    else {
      clearTimeout(poller.timer);
      setLive("paused");
    }
  }

  // ---------------------------------------------------------------- router

  function route() {
    if (!session) return;
    for (const d of document.querySelectorAll("dialog[open]")) d.close(); // a dialog belongs to its page
    if (!session.signedIn) return showLogin();
    if (!main) shell();
    const hash = location.hash.replace(/^#\/?/, "");
    const [path, qs] = hash.split("?");
    const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
    const params = new URLSearchParams(qs || "");
    window.scrollTo(0, 0);
    if (poller.ms === 0) poll(); // paused: fetch once for the new page
    clearInterval(clusterTimer);
    const onCluster = parts[0] === "cluster";
    for (const [id, on] of [["nav-queues", !onCluster], ["nav-cluster", onCluster]]) {
      const a = document.getElementById(id);
      if (a) a.classList.toggle("active", on);
    }
    if (onCluster) return showCluster();
    if (parts[0] === "queues" && parts[1]) return showQueue(parts[1], parts[2] || "overview", params);
    return showQueues();
  }

  window.addEventListener("hashchange", route);

  // ------------------------------------------------------------- cluster

  // showCluster shows the cluster's id, members, leader and shards, from
  // the server's GET /cluster/status (outside the console's API), refreshed
  // every 2 s. The cluster id is the asked node's, as `fifoq cluster status`
  // prints it: a restored copy and its original differ in it.
  let clusterTimer = 0;
  function showCluster() {
    const note = h("div", { class: "sub", id: "cluster-note" }, "");
    const tbody = h("tbody");
    const table = h("table", { class: "data", id: "cluster-table" },
      h("thead", {}, h("tr", {},
        h("th", {}, "Node"), h("th", {}, "Raft address"), h("th", {}, "State"), h("th", { class: "num" }, "Term"),
        h("th", { class: "num" }, "Applied"), h("th", { class: "num" }, "Lag"), h("th", {}, "Last contact"), h("th", {}, "SQS endpoint"))),
      tbody);
    const shardBody = h("tbody");
    const shardPanel = h("section", { class: "panel", id: "shards-panel", hidden: true },
      h("div", { class: "panel-head" }, h("h2", {}, "Shards")),
      h("div", { class: "table-wrap" }, h("table", { class: "data", id: "shards-table" },
        h("thead", {}, h("tr", {}, h("th", { class: "num" }, "Shard"), h("th", {}, "Leader"), h("th", {}, "Replicas (state, lag)"))),
        shardBody)));
    put(clear(main),
      h("div", { class: "page-head" }, h("div", { class: "titles" }, h("h1", {}, "Cluster"), note)),
      h("section", { class: "panel" }, h("div", { class: "table-wrap" }, table)),
      shardPanel);
    async function load() {
      let data;
      try {
        const res = await fetch("../cluster/status", { headers: { Accept: "application/json" }, credentials: "same-origin" });
        data = await res.json();
        if (!res.ok) throw new Error(data && data.error ? data.error : res.status + " " + res.statusText);
      } catch (e) {
        note.textContent = "The cluster's status cannot be shown: " + e.message;
        clear(tbody);
        return;
      }
      const asked = data.members.find((m) => m.id === data.node_id);
      const clusterID = asked && asked.status && asked.status.cluster_id;
      note.textContent = "leader: " + (data.leader_id || "none") + " · asked node " + data.node_id + " · cluster id: " + (clusterID || "none");
      const shards = data.shards || [];
      shardPanel.hidden = shards.length === 0;
      put(clear(shardBody), shards.map((sh) =>
        h("tr", { "data-shard": sh.shard },
          h("td", { class: "num" }, String(sh.shard)),
          h("td", { class: "name" }, sh.leader_id || "none"),
          h("td", {}, (sh.replicas || []).map((r) => r.id + " (" + r.state + ", " + fmtInt(r.lag) + ")").join(" · ")))));
      put(clear(tbody), data.members.map((m) => {
        const st = m.status;
        let contact = "";
        if (m.leader) contact = "leader";
        else if (st && st.last_contact && !st.last_contact.startsWith("0001")) contact = fmtInt(Math.max(0, Date.now() - Date.parse(st.last_contact))) + " ms ago";
        return h("tr", { class: m.leader ? "open" : null, "data-node": m.id },
          h("td", { class: "name" }, h("b", {}, m.id), m.voter ? null : " (non-voter)"),
          h("td", { class: "mono" }, m.raft_addr || ""),
          h("td", {}, st ? st.state : "unreachable" + (m.error ? " (" + m.error + ")" : "")),
          h("td", { class: "num" }, st ? fmtInt(st.term) : ""),
          h("td", { class: "num" }, st ? fmtInt(st.applied_index) : ""),
          h("td", { class: "num" }, st ? fmtInt(m.lag) : ""),
          h("td", {}, contact),
          h("td", { class: "mono" }, st && st.sqs_endpoint ? st.sqs_endpoint : ""));
      }));
    }
    load();
    clusterTimer = setInterval(load, 2000);
  }

  // ---------------------------------------------------------------- sign-in

  function showLogin(message) {
    setView(null);
    main = null;
    clearTimeout(poller.timer);
    const key = h("input", { id: "login-key", name: "accessKeyId", autocomplete: "username", required: true, spellcheck: "false", placeholder: "AKIA…" });
    const secret = h("input", { id: "login-secret", name: "secretAccessKey", type: "password", autocomplete: "current-password", required: true });
    const err = h("div", { class: "err", id: "login-error", hidden: !message, role: "alert" }, message || "");
    const submit = h("button", { class: "btn primary", id: "login-submit", type: "submit" }, "Sign in");
    const form = h("form", { class: "panel", onsubmit: async (e) => {
      e.preventDefault();
      submit.disabled = true;
      err.hidden = true;
      try {
        session = await call("POST", "login", { accessKeyId: key.value.trim(), secretAccessKey: secret.value });
        secret.value = "";
        store.samples = [];
        if (!location.hash || location.hash === "#/login") location.hash = "#/queues";
        route();
        poll();
      } catch (e2) {
        err.textContent = e2.message;
        err.hidden = false;
        submit.disabled = false;
        secret.select();
      }
    } },
      h("div", { class: "panel-body" },
        h("h1", {}, "Sign in"),
        h("p", { class: "lead" }, "with an access key of this server"),
        err,
        h("label", { class: "field" }, "Access key ID", key),
        h("label", { class: "field" }, "Secret access key", secret),
        submit));
    put(clear(document.getElementById("app")), h("div", { class: "login-wrap" }, h("div", { class: "login" },
      h("div", { class: "brand-big" }, h("img", { src: "static/icon.svg", alt: "" }), "fifoq"),
      form,
      h("div", { class: "foot" }, "Keys come from the server's --credentials file or FIFOQ_ACCESS_KEY_ID."))));
    key.focus();
  }

  function signedOut() {
    if (!session || !session.signedIn) return;
    session.signedIn = false;
    showLogin("Your session has ended; sign in again.");
  }

  async function signOut() {
    try {
      session = await call("POST", "logout");
    } catch (e) {
      toastError("Sign-out failed", e);
      return;
    }
    store.samples = [];
    showLogin();
  }

  // ----------------------------------------------------------- queue list

  function showQueues() {
    const filter = h("input", { class: "search", id: "queue-filter", type: "search", placeholder: "Filter queues", "aria-label": "Filter queues" });
    const cards = {
      queues: statCard("Queues"),
      visible: statCard("Available", "visible"),
      inflight: statCard("In flight", "inflight"),
      throughput: statCard("Throughput"),
    };
    const keys = ["sent", "received", "deleted"], labels = ["Sent", "Received", "Deleted"];
    const ch = chart(keys, labels, "/s");
    const lg = legend(keys, labels);
    const tbody = h("tbody");
    const table = h("table", { class: "data", id: "queues-table" },
      h("thead", {}, h("tr", {},
        h("th", {}, "Name"), h("th", {}, "Type"), h("th", { class: "num" }, "Available"), h("th", { class: "num" }, "In flight"),
        h("th", { class: "num" }, "Delayed"), h("th", { class: "num" }, "Oldest"), h("th", { class: "num" }, "Sent/s"),
        h("th", { class: "num" }, "Received/s"), h("th", {}, "Dead-letter queue"))),
      tbody);
    const tablePanel = h("section", { class: "panel" }, h("div", { class: "table-wrap" }, table));
    const count = h("span", {}, "");
    put(clear(main), 
      h("div", { class: "page-head" },
        h("div", { class: "titles" }, h("h1", {}, "Queues"), h("div", { class: "sub" }, count, h("span", {}, "account ", h("code", {}, session.account)), h("span", {}, session.region))),
        h("div", { class: "actions" }, filter)),
      h("div", { class: "cards" }, Object.values(cards).map((c) => c.el)),
      h("section", { class: "panel" },
        h("div", { class: "panel-head" }, h("h2", {}, "Throughput"), h("span", { class: "note" }, "messages per second, all queues, last 5 minutes"), h("div", { class: "spacer" }), lg.el),
        h("div", { class: "panel-body" }, ch.el)),
      tablePanel);

    function render() {
      const data = store.latest;
      if (!data) return;
      const qs = data.queues;
      const pts = series(null);
      const last = pts.length ? pts[pts.length - 1] : null;
      const fifo = qs.filter((q) => q.fifo).length;
      count.textContent = qs.length === 1 ? "1 queue" : fmtInt(qs.length) + " queues";
      cards.queues.set(fmtInt(qs.length), fifo + " FIFO · " + (qs.length - fifo) + " standard");
      const sum = (k) => qs.reduce((a, q) => a + q[k], 0);
      cards.visible.set(fmtInt(sum("visible")), fmtInt(sum("delayed")) + " delayed");
      cards.inflight.set(fmtInt(sum("notVisible")), "received, not yet deleted");
      cards.throughput.set(last ? fmtRate(last.sent) : "–", last ? "sent/s · " + fmtRate(last.received) + " received/s" : "measuring…", "msg/s");
      ch.update(pts, data.now);
      for (const k of keys) lg.set(k, last ? fmtRate(last[k]) + "/s" : "–");

      const f = filter.value.trim().toLowerCase();
      const shown = qs.filter((q) => !f || q.name.toLowerCase().includes(f));
      if (!qs.length) {
        patch(tbody, h("tr", {}, h("td", { colspan: 9 }, emptyQueues())));
        return;
      }
      if (!shown.length) {
        patch(tbody, h("tr", {}, h("td", { colspan: 9, class: "empty-state" }, "No queue matches “" + filter.value + "”.")));
        return;
      }
      patch(tbody, shown.map((q) => {
        const r = latestRates(q.name);
        const href = "#/queues/" + encodeURIComponent(q.name);
        const isDLQ = q.deadLetterSources > 0;
        return h("tr", { class: "link", "data-queue": q.name, onclick: (e) => { if (!e.target.closest("a")) location.hash = href; } },
          h("td", { class: "name" }, h("a", { href }, q.name), " ", isDLQ ? h("span", { class: "badge dlq", title: "Dead-letter queue of " + q.deadLetterSources + " queue(s)" }, "DLQ") : null, q.moveTaskRunning ? h("span", { class: "badge running" }, "redriving") : null),
          h("td", {}, h("span", { class: "badge" + (q.fifo ? " fifo" : "") }, q.fifo ? "FIFO" : "Standard")),
          h("td", { class: "num", "data-col": "visible" }, isDLQ && q.visible > 0 ? h("span", { class: "badge danger" }, fmtInt(q.visible)) : zeroOr(q.visible)),
          h("td", { class: "num", "data-col": "inflight" }, zeroOr(q.notVisible)),
          h("td", { class: "num", "data-col": "delayed" }, zeroOr(q.delayed)),
          h("td", { class: "num" }, q.oldestAgeMs ? fmtDur(q.oldestAgeMs) : h("span", { class: "zero" }, "–")),
          h("td", { class: "num" }, r ? zeroOr(r.sent, fmtRate(r.sent)) : "–"),
          h("td", { class: "num" }, r ? zeroOr(r.received, fmtRate(r.received)) : "–"),
          h("td", {}, q.deadLetterTargetArn ? dlqLink(q) : h("span", { class: "faint" }, "–")));
      }));
    }

    filter.addEventListener("input", render);
    const onKey = (e) => {
      if (e.key === "/" && document.activeElement.tagName !== "INPUT" && document.activeElement.tagName !== "TEXTAREA") {
        e.preventDefault();
        filter.focus();
      }
    };
    document.addEventListener("keydown", onKey);
    store.listeners.add(render);
    render();
    setView({ destroy: () => { store.listeners.delete(render); ch.destroy(); document.removeEventListener("keydown", onKey); } });
  }

  function dlqLink(q) {
    const label = q.deadLetterTargetName || q.deadLetterTargetArn;
    const el = q.deadLetterTargetName ? h("a", { href: "#/queues/" + encodeURIComponent(q.deadLetterTargetName), class: "mono" }, label) : h("span", { class: "mono" }, label);
    return h("span", { class: "nowrap" }, el, h("span", { class: "faint" }, " after " + q.maxReceiveCount + "×"));
  }

  function emptyQueues() {
    const base = location.origin;
    return h("div", { class: "empty-state" },
      h("h3", {}, "No queues yet"),
      h("div", {}, "Create one with any SQS client, or declare it in the server's config file."),
      h("pre", { class: "snippet" }, "aws --endpoint-url " + base + " sqs create-queue \\\n    --queue-name orders.fifo --attributes FifoQueue=true,ContentBasedDeduplication=true"));
  }

  function statCard(label, swatch) {
    const value = h("div", { class: "value" }, "–");
    const foot = h("div", { class: "foot" }, "\u00a0");
    const el = h("div", { class: "card" }, h("div", { class: "label" }, swatch ? h("span", { class: "swatch " + swatch }) : null, label), value, foot);
    return {
      el,
      set(v, f, unit) {
        put(clear(value), v, unit ? h("small", {}, unit) : null);
        foot.textContent = f || "\u00a0";
      },
    };
  }

  // ----------------------------------------------------------- queue page

  function showQueue(name, tab, params) {
    const q = { name, detail: null, error: null };
    const head = h("div", { class: "page-head" });
    const tabs = h("nav", { class: "tabs" });
    const body = h("div");
    put(clear(main), head, tabs, body);
    let tabView = null;
    let destroyed = false;

    async function load() {
      try {
        q.detail = await call("GET", qpath(name));
        q.error = null;
      } catch (e) {
        q.error = e;
      }
      if (destroyed) return;
      renderFrame();
      if (tabView && tabView.refresh) tabView.refresh(q.detail);
    }

    function renderFrame() {
      if (q.error && !q.detail) {
        put(clear(head), h("div", { class: "titles" }, h("div", { class: "crumbs" }, h("a", { href: "#/queues" }, "Queues"), " / "), h("h1", {}, h("span", { class: "qname" }, name))));
        clear(tabs);
        put(clear(body), h("section", { class: "panel" }, h("div", { class: "empty-state", id: "queue-error" }, h("h3", {}, q.error.code === "QueueDoesNotExist" ? "This queue does not exist" : "The queue cannot be shown"), h("div", {}, q.error.message), h("p", {}, h("a", { href: "#/queues" }, "Back to the queues")))));
        if (tabView && tabView.destroy) tabView.destroy();
        tabView = null;
        // A queue that does not exist is not asked for again and again.
        if (q.error.status === 404) store.listeners.delete(onData);
        return;
      }
      const d = q.detail, qq = d.queue;
      if (!head.firstChild) buildHead(d);
      badges.replaceChildren(...queueBadges(qq));
      const dlTab = qq.deadLetterSources > 0 || qq.deadLetterTargetArn;
      const want = [["overview", "Overview"], ["messages", "Messages", qq.visible + qq.notVisible + qq.delayed]];
      // A standard queue has tenants only when messages carry group ids.
      if (qq.fifo || qq.groups > 0 || tab === "groups") want.push(["groups", qq.fifo ? "Groups" : "Tenants", qq.groups]);
      if (dlTab) want.push(["dead-letter", qq.deadLetterSources > 0 ? "Redrive" : "Dead-letter", qq.deadLetterSources > 0 ? qq.visible : null]);
      patch(tabs, want.map(([id, label, n]) => h("a", { href: "#/queues/" + encodeURIComponent(name) + (id === "overview" ? "" : "/" + id), class: id === tab ? "active" : null, "data-tab": id }, label, n !== undefined && n !== null ? h("span", { class: "count" }, fmtCompact(n)) : null)));
      if (!tabView) {
        const make = { overview: overviewTab, messages: messagesTab, groups: groupsTab, "dead-letter": deadLetterTab }[tab] || overviewTab;
        tabView = make(q, body, params, load);
      }
    }

    const badges = h("span", { class: "badges" });
    function buildHead(d) {
      const qq = d.queue;
      const url = location.origin + qq.url;
      put(head, 
        h("div", { class: "titles" },
          h("div", { class: "crumbs" }, h("a", { href: "#/queues" }, "Queues"), " / "),
          h("h1", {}, h("span", { class: "qname", id: "queue-name" }, name), badges),
          h("div", { class: "sub" },
            h("span", {}, "URL ", h("code", {}, url), " ", h("button", { class: "btn link", type: "button", title: "Copy the queue URL", onclick: () => copy(url) }, icon("copy"))),
            h("span", {}, "ARN ", h("code", {}, qq.arn), " ", h("button", { class: "btn link", type: "button", title: "Copy the ARN", onclick: () => copy(qq.arn) }, icon("copy"))))),
        h("div", { class: "actions" },
          h("button", { class: "btn", id: "send-open", type: "button", onclick: () => sendDialog(q, () => { poll(); load(); if (tabView && tabView.reload) tabView.reload(); }) }, icon("send"), "Send message"),
          h("button", { class: "btn danger", id: "purge-open", type: "button", onclick: () => purgeDialog(q, () => { poll(); load(); if (tabView && tabView.reload) tabView.reload(); }) }, icon("trash"), "Purge")));
    }

    const onData = () => load();
    store.listeners.add(onData);
    load();
    setView({ destroy: () => { destroyed = true; store.listeners.delete(onData); if (tabView && tabView.destroy) tabView.destroy(); } });
  }

  function queueBadges(qq) {
    return [
      h("span", { class: "badge" + (qq.fifo ? " fifo" : "") }, qq.fifo ? "FIFO" : "Standard"),
      qq.deadLetterSources > 0 ? h("span", { class: "badge dlq" }, "Dead-letter queue") : null,
      qq.moveTaskRunning ? h("span", { class: "badge running" }, "Redrive running") : null,
      qq.shard != null ? h("span", { class: "badge shard", title: "The Raft group of the cluster that holds the queue" }, "Shard " + qq.shard) : null,
    ].filter(Boolean);
  }

  // ------------------------------------------------------------- overview

  const ATTR_ROWS = [
    ["FifoQueue", "Type", (v) => (v === "true" ? "FIFO" : "Standard")],
    ["VisibilityTimeout", "Visibility timeout", fmtSeconds],
    ["MessageRetentionPeriod", "Retention period", fmtSeconds],
    ["DelaySeconds", "Delivery delay", fmtSeconds],
    ["ReceiveMessageWaitTimeSeconds", "Receive wait time", fmtSeconds],
    ["MaximumMessageSize", "Maximum message size", (v) => fmtBytes(Number(v))],
    ["ContentBasedDeduplication", "Content-based deduplication", (v) => (v === "true" ? "On" : "Off")],
    ["DeduplicationScope", "Deduplication scope"],
    ["FifoThroughputLimit", "Throughput limit"],
    ["SqsManagedSseEnabled", "SQS-managed encryption", (v) => (v === "true" ? "On" : "Off")],
    ["KmsMasterKeyId", "KMS key"],
    ["KmsDataKeyReusePeriodSeconds", "KMS data key reuse", fmtSeconds],
    ["RedrivePolicy", "Redrive policy", fmtRedrive],
    ["RedriveAllowPolicy", "Redrive allow policy", prettyJSON],
    ["Policy", "Access policy", prettyJSON],
    ["CreatedTimestamp", "Created", (v) => fmtDate(Number(v) * 1000)],
    ["LastModifiedTimestamp", "Last modified", (v) => fmtDate(Number(v) * 1000)],
  ];
  const HIDDEN_ATTRS = new Set(["QueueArn", "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"]);

  // fmtRedrive shows a RedrivePolicy as what it does.
  function fmtRedrive(v) {
    try {
      const p = JSON.parse(v);
      const name = String(p.deadLetterTargetArn).split(":").pop();
      return [h("span", { class: "mono" }, name), h("span", { class: "muted" }, " after " + p.maxReceiveCount + " receives")];
    } catch (e) {
      return v;
    }
  }

  function prettyJSON(v) {
    try {
      return h("pre", { class: "snippet" }, JSON.stringify(JSON.parse(v), null, 2));
    } catch (e) {
      return v;
    }
  }

  function overviewTab(q, body, params, reload) {
    const cards = {
      visible: statCard("Available", "visible"),
      inflight: statCard("In flight", "inflight"),
      delayed: statCard("Delayed", "delayed"),
      oldest: statCard("Oldest message"),
    };
    const tk = ["sent", "received", "deleted"], tl = ["Sent", "Received", "Deleted"];
    const dk = ["visible", "inflight", "delayed"], dl = ["Available", "In flight", "Delayed"];
    const tch = chart(tk, tl, "/s"), dch = chart(dk, dl, "");
    const tlg = legend(tk, tl), dlg = legend(dk, dl);
    const attrs = h("dl", { class: "kv", id: "attributes" });
    const side = h("div");
    put(clear(body), 
      h("div", { class: "cards" }, Object.values(cards).map((c) => c.el)),
      h("div", { class: "grid2" },
        h("section", { class: "panel" }, h("div", { class: "panel-head" }, h("h2", {}, "Throughput"), h("span", { class: "note" }, "msg/s"), h("div", { class: "spacer" }), tlg.el), h("div", { class: "panel-body" }, tch.el)),
        h("section", { class: "panel" }, h("div", { class: "panel-head" }, h("h2", {}, "Backlog"), h("span", { class: "note" }, "messages"), h("div", { class: "spacer" }), dlg.el), h("div", { class: "panel-body" }, dch.el))),
      h("div", { class: "grid2" },
        h("section", { class: "panel" }, h("div", { class: "panel-head" }, h("h2", {}, "Configuration")), h("div", { class: "panel-body" }, attrs)),
        side));

    function refresh(d) {
      if (!d) return;
      const qq = d.queue;
      cards.visible.set(fmtInt(qq.visible), qq.fifo ? fmtInt(qq.groups) + " groups" : "ready to receive");
      cards.inflight.set(fmtInt(qq.notVisible), "received, not yet deleted");
      cards.delayed.set(fmtInt(qq.delayed), "not yet deliverable");
      cards.oldest.set(qq.oldestAgeMs ? fmtDur(qq.oldestAgeMs) : "–", qq.oldestAgeMs ? "since it entered the queue" : "the queue is empty");
      const pts = series(q.name);
      const last = pts.length ? pts[pts.length - 1] : null;
      tch.update(pts, d.now);
      dch.update(pts, d.now);
      for (const k of tk) tlg.set(k, last ? fmtRate(last[k]) + "/s" : "–");
      dlg.set("visible", fmtCompact(qq.visible));
      dlg.set("inflight", fmtCompact(qq.notVisible));
      dlg.set("delayed", fmtCompact(qq.delayed));

      const a = d.attributes || {};
      const rows = [];
      const seen = new Set(HIDDEN_ATTRS);
      for (const [key, label, fmt] of ATTR_ROWS) {
        seen.add(key);
        if (key === "FifoQueue") {
          rows.push([label, key, fmt(a[key] || "false")]);
          continue;
        }
        if (a[key] === undefined || a[key] === "") continue;
        rows.push([label, key, fmt ? fmt(a[key]) : a[key]]);
      }
      for (const [key, v] of Object.entries(a).sort()) if (!seen.has(key)) rows.push([key, key, v]);
      put(clear(attrs), rows.map(([label, key, v]) => [h("dt", {}, label, h("code", {}, key)), h("dd", { "data-attr": key }, v)]));

      const c = qq.counters;
      put(clear(side), 
        qq.deadLetterTargetArn || qq.deadLetterSources > 0 ? deadLetterSummary(d) : null,
        h("section", { class: "panel" }, h("div", { class: "panel-head" }, h("h2", {}, "Since the server started")),
          h("div", { class: "panel-body" }, h("dl", { class: "kv" },
            h("dt", {}, "Sent"), h("dd", {}, fmtInt(c.sent), h("span", { class: "faint" }, " · " + fmtBytes(c.sentBytes))),
            h("dt", {}, "Received"), h("dd", {}, fmtInt(c.received)),
            h("dt", {}, "Deleted"), h("dd", {}, fmtInt(c.deleted)),
            h("dt", {}, "Empty receives"), h("dd", {}, fmtInt(c.emptyReceives))))),
        h("section", { class: "panel" }, h("div", { class: "panel-head" }, h("h2", {}, "Tags")),
          h("div", { class: "panel-body" }, Object.keys(d.tags).length
            ? h("dl", { class: "kv" }, Object.entries(d.tags).sort().map(([k, v]) => [h("dt", { class: "mono" }, k), h("dd", {}, v)]))
            : h("span", { class: "muted" }, "No tags."))));
    }
    refresh(q.detail);
    return { refresh, destroy: () => { tch.destroy(); dch.destroy(); } };
  }

  function deadLetterSummary(d) {
    const qq = d.queue;
    const rows = [];
    if (qq.deadLetterTargetArn) rows.push(h("dt", {}, "Dead-letter queue"), h("dd", {}, dlqLink(qq)));
    if (qq.deadLetterSources > 0) rows.push(h("dt", {}, "Dead-letter queue of"), h("dd", {}, d.deadLetterSources.map((n, i) => [i ? ", " : "", h("a", { class: "mono", href: "#/queues/" + encodeURIComponent(n) }, n)])));
    return h("section", { class: "panel" }, h("div", { class: "panel-head" }, h("h2", {}, "Dead letters"), h("div", { class: "spacer" }),
      qq.deadLetterSources > 0 ? h("a", { class: "btn small", href: "#/queues/" + encodeURIComponent(qq.name) + "/dead-letter" }, icon("undo"), "Redrive") : null),
    h("div", { class: "panel-body" }, h("dl", { class: "kv" }, rows)));
  }

  // ------------------------------------------------------------- messages

  function messagesTab(q, body, params) {
    const fifo = q.detail.queue.fifo;
    const group = h("input", { id: "peek-group", type: "search", class: "search", placeholder: "All groups", value: params.get("group") || "", "aria-label": "Message group" });
    const limit = h("select", { id: "peek-limit", "aria-label": "How many messages" }, [10, 20, 50, 100].map((n) => h("option", { value: n, selected: n === 20 }, "First " + n)));
    const stamp = h("span", { class: "muted", id: "peek-stamp" });
    const peekBtn = h("button", { class: "btn primary", id: "peek-refresh", type: "button", onclick: () => reload() }, icon("eye"), "Peek");
    const tbody = h("tbody");
    const table = h("table", { class: "data", id: "messages-table" },
      h("thead", {}, h("tr", {},
        h("th", {}, fifo ? "Sequence" : "#"), h("th", {}, "Message ID"), fifo ? h("th", {}, "Group") : null, h("th", {}, "State"),
        h("th", { class: "num" }, "Receives"), h("th", { class: "num" }, "Age"), h("th", { class: "num" }, "Size"), h("th", {}, "Body"))),
      tbody);
    put(clear(body), 
      h("div", { class: "notice" }, icon("info"), h("span", {}, h("b", {}, "Peek"), " shows messages without receiving them: their visibility, receive count and group lock stay as they are.")),
      h("section", { class: "panel" },
        h("div", { class: "panel-head" },
          h("div", { class: "toolbar" }, fifo ? group : null, limit, peekBtn),
          h("div", { class: "spacer" }), stamp),
        h("div", { class: "table-wrap" }, table)));
    const cols = fifo ? 8 : 7;
    let open = new Set();
    let seq = 0;

    async function reload() {
      const my = ++seq;
      const qs = new URLSearchParams({ limit: limit.value });
      if (fifo && group.value.trim() !== "") qs.set("group", group.value.trim());
      peekBtn.disabled = true;
      try {
        const data = await call("GET", qpath(q.name, "/messages?" + qs));
        if (my !== seq) return;
        render(data);
      } catch (e) {
        toastError("Peek failed", e);
      } finally {
        peekBtn.disabled = false;
      }
    }

    function render(data) {
      stamp.textContent = "as of " + fmtClock(data.now);
      clear(tbody);
      if (!data.messages.length) {
        put(tbody, h("tr", {}, h("td", { colspan: cols }, h("div", { class: "empty-state" }, h("h3", {}, "No messages"), group.value ? "Group “" + group.value + "” holds no message." : "The queue is empty."))));
        return;
      }
      data.messages.forEach((m, i) => {
        const detail = h("tr", { class: "detail", hidden: !open.has(m.messageId) }, h("td", { colspan: cols }, messageDetail(m, data.now)));
        const row = h("tr", { class: "link" + (open.has(m.messageId) ? " open" : ""), "data-message-id": m.messageId, "data-state": m.state, "data-receives": m.receiveCount, onclick: () => {
          detail.hidden = !detail.hidden;
          row.classList.toggle("open", !detail.hidden);
          if (detail.hidden) open.delete(m.messageId);
          else open.add(m.messageId);
        } },
          h("td", { class: "mono nowrap", title: m.sequenceNumber || "" }, fifo ? "…" + m.sequenceNumber.slice(-8) : String(i + 1)),
          h("td", { class: "mono nowrap" }, m.messageId),
          fifo ? h("td", { class: "mono" }, m.groupId) : null,
          h("td", {}, stateBadge(m, data.now)),
          h("td", { class: "num" }, zeroOr(m.receiveCount)),
          h("td", { class: "num", title: fmtDate(m.sentAt) }, fmtDur(data.now - m.enqueuedAt)),
          h("td", { class: "num" }, fmtBytes(m.size)),
          h("td", {}, h("div", { class: "body-preview" }, m.body.slice(0, 200))));
        put(tbody, row, detail);
      });
    }

    limit.addEventListener("change", reload);
    group.addEventListener("keydown", (e) => { if (e.key === "Enter") reload(); });
    reload();
    return { reload };
  }

  // indentJSON lays out a JSON object or array over lines, changing only
  // whitespace outside strings: numbers and escapes stay as they were sent
  // (JSON.parse would round big integers). Anything else is returned as is.
  function indentJSON(text) {
    if (!/^\s*[[{]/.test(text)) return text;
    try {
      JSON.parse(text);
    } catch (e) {
      return text;
    }
    let out = "", depth = 0, inStr = false, esc = false;
    const nl = () => "\n" + "  ".repeat(depth);
    for (let i = 0; i < text.length; i++) {
      const c = text[i];
      if (inStr) {
        out += c;
        if (esc) esc = false;
        else if (c === "\\") esc = true;
        else if (c === '"') inStr = false;
        continue;
      }
      if (c === " " || c === "\t" || c === "\n" || c === "\r") continue;
      if (c === '"') {
        inStr = true;
        out += c;
      } else if (c === "{" || c === "[") {
        const close = c === "{" ? "}" : "]";
        let j = i + 1;
        while (j < text.length && /\s/.test(text[j])) j++;
        if (text[j] === close) {
          out += c + close;
          i = j;
        } else {
          depth++;
          out += c + nl();
        }
      } else if (c === "}" || c === "]") {
        depth--;
        out += nl() + c;
      } else if (c === ",") {
        out += "," + nl();
      } else if (c === ":") {
        out += ": ";
      } else {
        out += c;
      }
    }
    return out;
  }

  function stateBadge(m, now) {
    const labels = { visible: "Available", inflight: "In flight", delayed: "Delayed" };
    const el = h("span", { class: "pill " + m.state }, labels[m.state] || m.state);
    if (m.visibleAt) el.title = (m.state === "inflight" ? "Visible again in " : "Deliverable in ") + fmtDur(m.visibleAt - now);
    return el;
  }

  function messageDetail(m, now) {
    const bodyText = indentJSON(m.body);
    const sys = [
      ["MessageId", m.messageId],
      ["SentTimestamp", fmtDate(m.sentAt)],
      ["SenderId", m.senderId],
      ["ApproximateReceiveCount", String(m.receiveCount)],
      m.firstReceivedAt ? ["ApproximateFirstReceiveTimestamp", fmtDate(m.firstReceivedAt)] : null,
      m.receivedAt && m.state === "inflight" ? ["Received", fmtDur(now - m.receivedAt) + " ago, visible again in " + fmtDur(m.visibleAt - now)] : null,
      m.state === "delayed" ? ["Deliverable in", fmtDur(m.visibleAt - now)] : null,
      m.groupId ? ["MessageGroupId", m.groupId] : null,
      m.sequenceNumber ? ["SequenceNumber", m.sequenceNumber] : null,
      m.deduplicationId ? ["MessageDeduplicationId", m.deduplicationId] : null,
      m.deadLetterSourceArn ? ["DeadLetterQueueSourceArn", m.deadLetterSourceArn] : null,
      m.traceHeader ? ["AWSTraceHeader", m.traceHeader] : null,
    ].filter(Boolean);
    return h("div", { class: "msg-detail" },
      h("div", {},
        h("h4", {}, "Body · " + fmtBytes(m.bodyBytes)),
        h("pre", { class: "body" }, bodyText || h("span", { class: "faint" }, "(empty)")),
        m.bodyTruncated ? h("div", { class: "truncated" }, "Only the first " + fmtBytes(m.body.length) + " of the body are shown.") : null,
        m.attributes.length ? [h("h4", { class: "spaced" }, "Message attributes"),
          h("dl", { class: "kv" }, m.attributes.map((a) => [h("dt", {}, a.name, h("code", {}, a.type)), h("dd", { class: "mono" }, a.value)]))] : null),
      h("div", {}, h("h4", {}, "System attributes"), h("dl", { class: "kv" }, sys.map(([k, v]) => [h("dt", { class: "mono" }, k), h("dd", { class: "mono" }, v)]))));
  }

  // --------------------------------------------------------------- groups

  function groupsTab(q, body) {
    const fifo = q.detail.queue.fifo;
    const find = h("input", { id: "group-find", type: "search", class: "search", placeholder: "Find a group by id", "aria-label": "Group id" });
    const summary = h("span", { class: "muted", id: "groups-summary" });
    const tbody = h("tbody");
    const next = h("button", { class: "btn small", type: "button", id: "groups-next", hidden: true }, "Next page →");
    const first = h("button", { class: "btn small", type: "button", id: "groups-first", hidden: true }, "← First page");
    const table = h("table", { class: "data", id: "groups-table" },
      h("thead", {}, h("tr", {},
        h("th", {}, fifo ? "Message group" : "Tenant"), h("th", { class: "num" }, "Backlog"), h("th", { class: "num" }, "Available"),
        h("th", { class: "num" }, "In flight"), h("th", { class: "num" }, "Delayed"), h("th", { class: "num" }, "Oldest"),
        fifo ? h("th", {}, "Held by") : null, fifo ? h("th", {}) : null)),
      tbody);
    put(clear(body), 
      h("div", { class: "notice" }, icon("info"), h("span", {}, fifo
        ? "A FIFO queue delivers each group in order, and holds a group while one of its messages is in flight: nothing else of the group is delivered until the holder deletes it or its visibility timeout runs out. Groups are listed oldest message first, the order in which receives serve them."
        : "A standard queue with message group ids is a fair queue: each group id is a tenant, served so that one tenant's backlog does not delay the others. Figures are as of the last request on the queue.")),
      h("section", { class: "panel" },
        h("div", { class: "panel-head" }, h("div", { class: "toolbar" }, find, h("button", { class: "btn", type: "button", id: "groups-refresh", onclick: () => load(after) }, icon("refresh"), "Refresh")), h("div", { class: "spacer" }), summary),
        h("div", { class: "table-wrap" }, table),
        h("div", { class: "pager" }, first, next)));
    let after = "";
    let seq = 0;
    const cols = fifo ? 8 : 6;

    async function load(from) {
      const my = ++seq;
      const qs = new URLSearchParams({ limit: "50" });
      if (find.value.trim()) qs.set("group", find.value.trim());
      else if (from) qs.set("after", from);
      try {
        const data = await call("GET", qpath(q.name, "/groups?" + qs));
        if (my !== seq) return;
        after = from;
        render(data);
      } catch (e) {
        toastError("Loading the groups failed", e);
      }
    }

    function render(data) {
      summary.textContent = fmtInt(data.total) + (fifo ? (data.total === 1 ? " group" : " groups") + " · " + fmtInt(data.inFlight) + " held by a consumer" : data.total === 1 ? " tenant" : " tenants") + " · as of " + fmtClock(data.now);
      clear(tbody);
      if (!data.groups.length) {
        put(tbody, h("tr", {}, h("td", { colspan: cols }, h("div", { class: "empty-state" }, find.value ? "No group “" + find.value + "” holds messages." : fifo ? "No message group holds messages: the queue is empty." : "No tenant holds messages."))));
      }
      for (const g of data.groups) {
        const o = g.owner;
        const peekHref = "#/queues/" + encodeURIComponent(q.name) + "/messages?group=" + encodeURIComponent(g.id);
        put(tbody, h("tr", { "data-group": g.id, "data-held": o ? "yes" : "no" },
          h("td", { class: "mono" }, g.id === "" ? h("span", { class: "faint" }, "(no group id)") : g.id),
          h("td", { class: "num" }, fmtInt(g.messages) + (g.capped ? "+" : "")),
          h("td", { class: "num" }, zeroOr(g.visible)),
          h("td", { class: "num" }, zeroOr(g.inFlight)),
          h("td", { class: "num" }, zeroOr(g.delayed)),
          h("td", { class: "num" }, g.oldestSentAt ? fmtDur(data.now - g.oldestSentAt) : "–"),
          fifo ? h("td", {}, o ? h("div", { class: "holder" },
            h("span", { class: "who", title: "Receipt handle " + o.receiptHandle }, o.attemptId ? "attempt " + o.attemptId : "receipt " + shortHandle(o.receiptHandle)),
            h("span", { class: "when" }, "since " + fmtDur(data.now - o.receivedAt) + " · releases in " + fmtDur(o.visibleAt - data.now) + (o.receiveCount > 1 ? " · receive #" + o.receiveCount : "")))
            : h("span", { class: "faint" }, "–")) : null,
          fifo ? h("td", { class: "num" }, h("a", { href: peekHref }, "Peek")) : null));
      }
      next.hidden = !data.next;
      next.onclick = () => load(data.next);
      first.hidden = !after;
      first.onclick = () => load("");
    }

    find.addEventListener("keydown", (e) => { if (e.key === "Enter") load(""); });
    find.addEventListener("search", () => load(""));
    load("");
    return { reload: () => load(after) };
  }

  // ---------------------------------------------------------- dead letters

  function deadLetterTab(q, body, params, reloadDetail) {
    const panels = h("div");
    put(clear(body), panels);
    const dest = h("select", { id: "redrive-dest", "aria-label": "Destination" });
    const rate = h("input", { id: "redrive-rate", type: "number", min: 1, max: 500, placeholder: "System optimised", "aria-label": "Maximum messages per second" });
    const start = h("button", { class: "btn primary", id: "redrive-start", type: "submit" }, icon("undo"), "Start redrive");
    const form = h("form", { class: "panel-body stack", id: "redrive-form", onsubmit: async (e) => {
      e.preventDefault();
      start.disabled = true;
      const req = {};
      if (dest.value) req.destinationArn = dest.value;
      if (rate.value) req.maxNumberOfMessagesPerSecond = parseInt(rate.value, 10);
      try {
        await call("POST", qpath(q.name, "/move-tasks"), req);
        toast("Redrive started", "Messages of " + q.name + " are moving " + (dest.value ? "to " + dest.options[dest.selectedIndex].text : "back to their source queues") + ".");
        reloadDetail();
        poll();
      } catch (err) {
        toastError("Redrive not started", err);
        start.disabled = false;
      }
    } },
      h("div", { class: "field-row" },
        h("label", { class: "field" }, "Move messages to", dest, h("span", { class: "hint" }, "Their source queues, or one queue of the same type.")),
        h("label", { class: "field" }, "Maximum messages per second", rate, h("span", { class: "hint" }, "Leave empty for the system-optimised rate."))),
      h("div", {}, start));
    const tasksBody = h("tbody");
    const cancelling = new Set(); // the handles of the tasks whose cancel is on its way
    const tasks = h("table", { class: "data", id: "tasks-table" }, h("thead", {}, h("tr", {}, h("th", {}, "Status"), h("th", {}, "Started"), h("th", {}, "Progress"), h("th", { class: "num" }, "Moved"), h("th", { class: "num" }, "Rate"), h("th", {}, "Destination"), h("th", {}))), tasksBody);
    let builtFor = null;

    function refresh(d) {
      if (!d) return;
      const qq = d.queue;
      const key = qq.deadLetterSources + "|" + (qq.deadLetterTargetArn || "");
      if (builtFor !== key) {
        builtFor = key;
        clear(panels);
        if (qq.deadLetterTargetArn) {
          put(panels, h("section", { class: "panel" }, h("div", { class: "panel-head" }, h("h2", {}, "Dead-letter queue")),
            h("div", { class: "panel-body" }, h("dl", { class: "kv" },
              h("dt", {}, "Messages go to"), h("dd", {}, qq.deadLetterTargetName ? h("a", { class: "mono", href: "#/queues/" + encodeURIComponent(qq.deadLetterTargetName) }, qq.deadLetterTargetName) : h("span", { class: "mono" }, qq.deadLetterTargetArn)),
              h("dt", {}, "After"), h("dd", {}, qq.maxReceiveCount + " receives without a delete")))));
        }
        if (qq.deadLetterSources > 0) {
          put(clear(dest), h("option", { value: "" }, "Their source queues"));
          for (const other of (store.latest ? store.latest.queues : [])) {
            if (other.name !== qq.name && other.fifo === qq.fifo) put(dest, h("option", { value: other.arn }, other.name));
          }
          put(panels, 
            h("section", { class: "panel" }, h("div", { class: "panel-head" }, h("h2", {}, "Redrive"), h("span", { class: "note" }, "dead-letter queue of ", d.deadLetterSources.map((n, i) => [i ? ", " : "", h("a", { class: "mono", href: "#/queues/" + encodeURIComponent(n) }, n)]))), form),
            h("section", { class: "panel" }, h("div", { class: "panel-head" }, h("h2", {}, "Message move tasks"), h("span", { class: "note" }, "the latest first")), h("div", { class: "table-wrap" }, tasks)));
        }
      }
      if (qq.deadLetterSources === 0) return;
      const running = d.moveTasks.some((t) => t.status === "RUNNING");
      start.disabled = running;
      start.title = running ? "A redrive is running; cancel it to start another." : "";
      if (!d.moveTasks.length) {
        patch(tasksBody, h("tr", {}, h("td", { colspan: 7 }, h("div", { class: "empty-state" }, "No redrive yet. ", qq.visible ? fmtInt(qq.visible) + " message(s) wait here." : "The queue is empty."))));
        return;
      }
      patch(tasksBody, d.moveTasks.map((t) => {
        const total = t.toMove || 0;
        const pct = total ? Math.min(100, (t.moved / total) * 100) : t.status === "COMPLETED" ? 100 : 0;
        const bar = h("span");
        bar.style.width = pct.toFixed(1) + "%";
        return h("tr", { "data-status": t.status },
          h("td", {}, h("span", { class: "pill " + t.status }, t.status.charAt(0) + t.status.slice(1).toLowerCase()), t.failureReason ? h("div", { class: "faint" }, t.failureReason) : null),
          h("td", { class: "nowrap", title: fmtDate(t.startedAt) }, fmtDur(d.now - t.startedAt) + " ago"),
          h("td", {}, h("div", { class: "bar" }, bar)),
          h("td", { class: "num" }, fmtInt(t.moved) + (t.toMove !== undefined ? " / " + fmtInt(t.toMove) : "")),
          h("td", { class: "num" }, t.maxNumberOfMessagesPerSecond ? t.maxNumberOfMessagesPerSecond + "/s" : h("span", { class: "faint" }, "optimised")),
          h("td", {}, t.destinationArn ? h("span", { class: "mono" }, t.destinationName || t.destinationArn) : h("span", { class: "muted" }, "source queues")),
          h("td", { class: "num" }, t.status === "RUNNING" && t.taskHandle ? h("button", { class: "btn small danger cancel-task", type: "button", disabled: cancelling.has(t.taskHandle), onclick: async (e) => {
            // A refresh while the cancel is on its way keeps the button
            // disabled (patch brings its attributes up to date).
            const button = e.currentTarget;
            cancelling.add(t.taskHandle);
            button.disabled = true;
            try {
              const r = await call("POST", "move-tasks/cancel", { taskHandle: t.taskHandle });
              toast("Redrive cancelled", fmtInt(r.approximateNumberOfMessagesMoved) + " message(s) had moved.");
              reloadDetail();
            } catch (err) {
              toastError("Cancel failed", err);
              button.disabled = false;
            } finally {
              cancelling.delete(t.taskHandle);
            }
          } }, "Cancel") : null));
      }));
    }
    refresh(q.detail);
    return { refresh };
  }

  // -------------------------------------------------------------- dialogs

  function dialog(id, title, lead, fields, submitLabel, danger, onSubmit) {
    const err = h("span", { class: "err", role: "alert" });
    const submit = h("button", { class: "btn " + (danger ? "danger solid" : "primary"), id: id + "-submit", type: "submit" }, submitLabel);
    const dlg = h("dialog", { id });
    const form = h("form", { method: "dialog", onsubmit: async (e) => {
      e.preventDefault();
      err.textContent = "";
      submit.disabled = true;
      try {
        await onSubmit();
        dlg.close();
      } catch (e2) {
        err.textContent = e2.message;
      } finally {
        submit.disabled = false;
      }
    } },
      h("div", { class: "d-head" }, h("h2", {}, title), lead ? h("p", {}, lead) : null),
      fields ? h("div", { class: "d-body" }, fields) : null,
      h("div", { class: "d-foot" }, err, h("button", { class: "btn", type: "button", onclick: () => dlg.close() }, "Cancel"), submit));
    put(dlg, form);
    dlg.addEventListener("close", () => dlg.remove());
    put(document.body, dlg);
    dlg.showModal();
    return dlg;
  }

  function sendDialog(q, done) {
    const qq = q.detail.queue;
    const cbd = q.detail.attributes.ContentBasedDeduplication === "true";
    const bodyEl = h("textarea", { id: "send-body", rows: 7, required: true, spellcheck: "false", placeholder: '{"hello": "fifoq"}' });
    const groupEl = h("input", { id: "send-group", required: qq.fifo, placeholder: "customer-42", spellcheck: "false" });
    const dedupEl = h("input", { id: "send-dedup", required: qq.fifo && !cbd, placeholder: cbd ? "From the body (content-based)" : "order-1", spellcheck: "false" });
    const delayEl = h("input", { id: "send-delay", type: "number", min: 0, max: 900, placeholder: q.detail.attributes.DelaySeconds || "0" });
    const attrRows = h("div", { class: "attr-rows" });
    function addAttr() {
      const row = h("div", { class: "attr-row" },
        h("input", { placeholder: "Name", class: "attr-name", spellcheck: "false" }),
        h("select", { class: "attr-type" }, ["String", "Number", "Binary"].map((t) => h("option", { value: t }, t))),
        h("input", { placeholder: "Value", class: "attr-value", spellcheck: "false" }),
        h("button", { class: "btn", type: "button", title: "Remove", onclick: () => row.remove() }, "×"));
      put(attrRows, row);
      row.firstChild.focus();
    }
    const fields = [
      h("label", { class: "field" }, "Message body", bodyEl),
      qq.fifo ? h("div", { class: "field-row" },
        h("label", { class: "field" }, "Message group ID", groupEl),
        h("label", { class: "field" }, "Deduplication ID", dedupEl, cbd ? h("span", { class: "hint" }, "Optional: the queue deduplicates by content.") : null))
        : h("div", { class: "field-row" }, h("label", { class: "field" }, "Delay (seconds)", delayEl), h("label", { class: "field" }, "Message group ID", groupEl, h("span", { class: "hint" }, "Optional: a fair-queue tenant."))),
      h("div", { class: "field" }, h("span", {}, "Message attributes"), attrRows, h("div", {}, h("button", { class: "btn small", type: "button", onclick: addAttr }, "+ Add attribute"))),
    ];
    dialog("send-dialog", "Send a message", ["To ", h("code", {}, qq.name), qq.fifo ? " (FIFO)" : ""], fields, "Send", false, async () => {
      const req = { body: bodyEl.value };
      if (groupEl.value.trim()) req.groupId = groupEl.value.trim();
      if (qq.fifo && dedupEl.value.trim()) req.deduplicationId = dedupEl.value.trim();
      if (!qq.fifo && delayEl.value !== "") req.delaySeconds = parseInt(delayEl.value, 10);
      const attrs = [];
      for (const row of attrRows.children) {
        const n = row.querySelector(".attr-name").value.trim();
        if (!n) continue;
        attrs.push({ name: n, type: row.querySelector(".attr-type").value, value: row.querySelector(".attr-value").value });
      }
      if (attrs.length) req.attributes = attrs;
      const r = await call("POST", qpath(qq.name, "/messages"), req);
      toast("Message sent", "ID " + r.messageId + (r.sequenceNumber ? " · sequence " + r.sequenceNumber : ""));
      done();
    });
    bodyEl.focus();
  }

  function purgeDialog(q, done) {
    const qq = q.detail.queue;
    const n = qq.visible + qq.notVisible + qq.delayed;
    dialog("purge-dialog", "Purge " + qq.name + "?", [
      "Every message of the queue is deleted: ", h("b", {}, fmtInt(n) + (n === 1 ? " message" : " messages")),
      " now, in flight ones included. This cannot be undone, and a queue can be purged once a minute."], null, "Purge queue", true, async () => {
      await call("POST", qpath(qq.name, "/purge"));
      toast("Queue purged", qq.name + " is empty.");
      done();
    });
  }

  // ------------------------------------------------------------------ boot

  async function boot() {
    try {
      session = await call("GET", "session");
    } catch (e) {
      put(clear(document.getElementById("app")), h("div", { class: "boot" }, "The console cannot reach the server: " + e.message));
      return;
    }
    route();
    if (session.signedIn) poll();
  }

  boot();
})();
