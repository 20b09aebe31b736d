// A drop's page: a countdown to the opening by the server's clock, a claim button, the code when won and
// "sold out" when gone. Each claim has its Idempotency-Key, so a double click or a retry of the same
// claim never takes two units; a visitor who may claim more than one (per_visitor) claims again with
// a new key. A drop behind a room sends the visitor through the room's line,
// which sends them back here with the admission.
"use strict";

const root = document.getElementById("drop");
const cfg = { base: root.dataset.base || "", drop: root.dataset.drop, room: root.dataset.room, holds: !!root.dataset.holds, missing: !!root.dataset.lineMissing, lang: root.dataset.lang };
const text = texts(root);
const now = serverClock(root);
const api = cfg.base + "/v1/drops/" + encodeURIComponent(cfg.drop);
// The site's enqueue token for one of its accounts (?enqueue= in its link), for a drop that counts the
// site's accounts: the claim is then the account's.
const vouch = fromLink("enqueue", "rg-enqueue-drop-" + cfg.drop);

// newKey makes the key of one claim: every retry of that claim sends it, and the next claim has another.
function newKey() {
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}
let key = newKey();

const carried = carriedAdmission(cfg.room);
const admission = carried.get;

let view = null;
let held = []; // the claims this visitor holds
const full = () => held.length >= ((view && view.per_visitor) || 1); // holds all it may
let busy = false;
let told = null; // the status last announced: the countdown itself is not read out each second
let pageTitle = document.title; // what the drop is, after the tab's tag

function showCodes(title, claims) {
  const box = $("result");
  box.replaceChildren();
  const p = document.createElement("p");
  p.textContent = title;
  box.append(p);
  for (const c of claims) {
    const code = document.createElement("div");
    code.className = "code";
    code.textContent = c.code;
    box.append(code);
    if (c.redeemed_at) { // used at the site's checkout
      const used = document.createElement("p");
      used.className = "muted small";
      used.textContent = text("code_used", { time: new Date(c.redeemed_at).toLocaleString(cfg.lang) });
      box.append(used);
    }
  }
}

function render() {
  if (!view) return;
  const t = now();
  const opens = Date.parse(view.opens_at);
  const closes = view.closes_at ? Date.parse(view.closes_at) : 0;
  let status = view.status;
  if (status === "scheduled" && t >= opens) status = "open";
  if (status === "open" && closes && t >= closes) status = "closed";
  // A corrected title, and the operator's word to the crowd: a second batch's date, once sold out.
  pageTitle = operatorSaid(view, "drop-message", pageTitle);
  const gone = Math.max(0, ...held.map((c) => c.seq || 0)); // units surely claimed, ahead of the feed
  const left = Math.max(0, Math.min(view.remaining, view.stock - gone));
  $("left").textContent = text("remaining", { n: left.toLocaleString(cfg.lang), stock: view.stock.toLocaleString(cfg.lang) });
  // A drop that ended, or whose visitor holds all it may claim, offers no button that cannot be
  // pressed, and a closed one no count of what is left to no one. An operator may open a closed drop
  // again, and then both come back.
  const ended = status === "closed" || status === "sold_out";
  $("left").hidden = status === "closed";
  if ($("claim-row")) $("claim-row").hidden = ended || full(); // absent from an older --templates page
  // How many each visitor may claim, when more than one; and, once this visitor holds them all, why the
  // button no longer claims.
  const each = view.per_visitor || 1;
  if ($("each")) {
    $("each").textContent = full() ? text("limit_reached", { n: each }) : text("per_visitor", { n: each });
    $("each").hidden = each < 2 || (ended && !full());
  }
  if (status === "scheduled") $("when").textContent = text("opens_in", { time: span(opens - t, text) });
  else if (status === "open") $("when").textContent = closes ? text("closes_in", { time: span(closes - t, text) }) : "";
  else if (status === "sold_out") $("when").textContent = text("sold_out");
  else $("when").textContent = text("closed_drop");
  const gated = cfg.room && !admission();
  $("gate").hidden = !gated;
  if (gated) {
    // A line held until the opening keeps places in the order people join: joining early is worth it.
    // A room not made yet has no line to send anyone to: the page says so instead.
    const gateText = cfg.missing ? "line_not_open" : status === "scheduled" && cfg.holds ? "line_before_opening" : "need_line";
    if ($("gate-text")) $("gate-text").textContent = text(gateText);
    $("line").hidden = cfg.missing;
    $("line").href = cfg.base + "/r/" + encodeURIComponent(cfg.room) + "?return_to=" + encodeURIComponent(cfg.base + "/d/" + cfg.drop) + "&lang=" + cfg.lang;
  }
  $("claim").disabled = busy || full() || gated || status !== "open";
  const more = held.length > 0 && !full(); // may claim again
  if (!busy) $("claim").textContent = text(more ? "claim_more" : "claim");
  if (status === "sold_out" && !held.length) $("result").textContent = text("sold_out_text");
  if (told !== null && status !== told && (status === "open" || status === "closed")) {
    $("announce").textContent = text(status === "open" ? "now_open" : "closed_drop");
  }
  told = status;
  // The tab's title counts down to the opening and then says what is left, so that a visitor who
  // opened the page early and looked away sees from the tab that it opened.
  const tag = held.length ? text("tab_claimed") : status === "scheduled" ? text("opens_in", { time: span(opens - t, text) })
    : status === "open" ? text("tab_left", { n: left.toLocaleString(cfg.lang) }) : status === "sold_out" ? text("sold_out") : text("tab_over");
  document.title = tag + " · " + pageTitle;
}

// The drop's live feed: its view whenever it changes, until it is sold out. While it holds, the page
// reads nothing; the browser reconnects it after a failure, and the polls below cover the gap.
let stream = null;
function listen() {
  if (typeof EventSource === "undefined" || (view && view.status === "sold_out")) return;
  stream = new EventSource(api + "/live");
  stream.addEventListener("drop", (m) => {
    view = JSON.parse(m.data);
    if (view.status === "sold_out") stream.close(); // final: the server ends the feed, and so do we
    render();
  });
}

// refresh reads the drop again every few seconds while its page is shown and its feed is down. Sold
// out is final, and the feed ends there; the page then looks only for the operator's message (a second
// batch's date): soon after the end, when an operator writes one, then less and less often, about once
// a minute (spacedLooks); a background tab reads nothing.
const nextLook = spacedLooks();
let lookAt = 0;
async function refresh() {
  if (stream && stream.readyState === EventSource.OPEN) return;
  if (document.hidden) return;
  if (view && view.status === "sold_out") {
    if (!lookAt) lookAt = Date.now() + nextLook();
    if (Date.now() < lookAt) return;
    lookAt = Date.now() + nextLook();
  }
  try {
    const r = await fetch(api, { credentials: "same-origin" });
    if (r.ok) view = await r.json();
  } catch (_) { /* the next refresh tries again */ }
  render();
}

async function claim() {
  if (busy || full()) return;
  busy = true;
  render();
  $("claim").textContent = text("claiming");
  const body = {};
  if (admission()) body.admission_token = admission();
  try {
    const headers = { "Content-Type": "application/json", "Idempotency-Key": key };
    if (vouch.get()) headers["Rushgate-Enqueue"] = vouch.get();
    const r = await fetch(api + "/claims", { method: "POST", credentials: "same-origin", headers, body: JSON.stringify(body) });
    const s = await r.json();
    const code = s.error && s.error.code;
    vouch.answered(r.status); // the account's visitor is now the cookie, or the token was refused
    if (r.status === 201) {
      if (!held.some((c) => c.claim_id === s.claim_id)) held.push(s); // a retry's answer is the same claim
      key = newKey();
      showCodes(text(held.length > 1 ? "won_more" : "won"), held);
    } else if (code === "already_claimed") {
      held = s.error.claims || [];
      showCodes(text("already"), held);
    } else if (code === "sold_out") {
      $("result").textContent = text("sold_out_text");
    } else if (code === "not_open") {
      $("result").textContent = text("not_open");
    } else if (code === "not_admitted") {
      carried.forget();
      $("result").textContent = text("need_line");
    } else {
      $("result").textContent = failure(text, s);
    }
  } catch (_) {
    $("result").textContent = text("error_retry"); // a retry sends the same key: it cannot claim twice
  }
  busy = false;
  render();
  refresh();
}

// Claims this browser already holds, when it holds a visitor token.
async function mine() {
  try {
    const r = await fetch(api + "/claims/mine", { credentials: "same-origin" });
    if (!r.ok) return;
    const s = await r.json();
    if (s.claims && s.claims.length) {
      held = s.claims;
      showCodes(text("already"), held);
    }
  } catch (_) { /* none known */ }
}

$("claim").addEventListener("click", claim);
if (cfg.missing) lookForLine(cfg.base, cfg.room, () => { cfg.missing = false; render(); });
mine().then(refresh).then(listen);
setInterval(render, 250);
setInterval(refresh, 2000);
document.addEventListener("visibilitychange", refresh);
