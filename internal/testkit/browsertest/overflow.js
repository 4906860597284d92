// The expression of Page.Overflow. See its documentation for the rules.
(() => {
  const root = document.documentElement;
  const vw = root.clientWidth;
  const out = [];
  if (root.scrollWidth > vw) {
    out.push(`document: scrollWidth=${root.scrollWidth} > clientWidth=${vw}`);
  }
  if (!document.body) {
    return out;
  }
  const describe = (el) => {
    let s = el.localName;
    if (el.id) s += "#" + el.id;
    const cls = (el.getAttribute("class") || "").trim();
    if (cls) s += "." + cls.split(/\s+/).join(".");
    return s;
  };
  // clipped reports whether an ancestor of el below body clips or scrolls
  // sideways.
  const clippedCache = new Map();
  const clipped = (el) => {
    const a = el.parentElement;
    if (!a || a === document.body || a === root) return false;
    if (clippedCache.has(a)) return clippedCache.get(a);
    const v = getComputedStyle(a).overflowX !== "visible" || clipped(a);
    clippedCache.set(a, v);
    return v;
  };
  // covered maps a reported element, and an element within one, to its
  // right edge.
  const covered = new Map();
  const within = (el, right) => {
    const p = el.parentElement;
    return p && covered.has(p) && right <= covered.get(p) + 0.5;
  };
  for (const el of document.body.querySelectorAll("*")) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    if (r.right <= vw + 0.5 || clipped(el)) continue;
    if (!within(el, r.right)) {
      out.push(`${describe(el)}: right=${Math.round(r.right)}`);
    }
    covered.set(el, r.right);
  }
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (!n.data.trim()) continue;
    const el = n.parentElement;
    if (!el || covered.has(el) || clipped(n)) continue;
    range.selectNodeContents(n);
    const r = range.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    if (r.right > vw + 0.5) {
      out.push(`${describe(el)} (text): right=${Math.round(r.right)}`);
    }
  }
  return out;
})()
