// The waiting-room page: joins the room, shows the place, the people ahead, the ETA and how far the line
// ahead has moved, live from the event stream (polling the status while the stream cannot be held), and
// on admission sends the visitor to the site with the admission token. Opening the page never gives up
// a place held in another room: the join asks nothing of the kind, and when the server answers
// waiting_elsewhere the page asks the visitor, and switches only on a click. Its texts come from the
// server in the visitor's language.
"use strict";

const root = document.getElementById("room");
const cfg = {
  base: root.dataset.base || "", room: root.dataset.room, join: root.dataset.join, events: root.dataset.events, status: root.dataset.status,
  target: root.dataset.target, lang: root.dataset.lang,
};
const text = texts(root);
const now = serverClock(root);
const POLL_EVERY = 2000; // the pace of a page that cannot hold a stream
const STREAM_RETRY = 30000; // how often a polling page tries the stream again

if (/^#[0-9a-fA-F]{6}$/.test(root.dataset.brand || "")) {
  document.documentElement.style.setProperty("--brand", root.dataset.brand);
}

function wait(s) {
  if (s < 60) return text("eta_soon");
  if (s < 90) return text("eta_minute");
  if (s < 5400) return text("eta_minutes", { n: Math.round(s / 60) });
  return text("eta_hours", { n: Math.round(s / 3600) });
}

const clock = (d) => d.toLocaleTimeString(cfg.lang, { hour: "2-digit", minute: "2-digit", second: "2-digit" });

// The line ahead at join time is kept per room for this tab, so the bar survives a reload.
const aheadKey = "rg-ahead-" + cfg.room;
function progress(ahead) {
  let first = Number(sessionStorage.getItem(aheadKey));
  if (!(first >= ahead)) {
    first = ahead;
    try { sessionStorage.setItem(aheadKey, String(first)); } catch (_) { /* private mode */ }
  }
  if (first === 0) return; // nobody was ahead: there is no line to measure
  const pct = Math.round(((first - ahead) / first) * 100);
  $("bar").hidden = false;
  $("fill").style.width = pct + "%";
  $("bar").setAttribute("aria-valuenow", String(pct));
  $("progress").textContent = text("progress", { pct });
}

let stream = null;
let pollTimer = 0;
let lostSince = 0;
let done = false;
let left = false; // the visitor gave the place up on this page
const pageTitle = document.title;
const leave = $("leave"); // absent from a --templates page that predates it

function connected() {
  lostSince = 0;
  $("lost").hidden = true;
  $("updated").textContent = text("updated", { time: clock(new Date()) });
}

// hourMinute says an instant (ms) as the visitor's clock shows it, with the day too when it is not today.
function hourMinute(ms) {
  const d = new Date(ms);
  const hm = d.toLocaleTimeString(cfg.lang, { hour: "2-digit", minute: "2-digit" });
  return d.toDateString() === new Date(now()).toDateString() ? hm : d.toLocaleDateString(cfg.lang, { month: "short", day: "numeric" }) + " " + hm;
}

// beforeOpening shows a place taken before the room's opening, and reports whether it did: until then
// every arrival's place is drawn at random among the others', so a number would only jump about as
// people come, and coming early gains nothing. The page counts down to the opening instead, and says
// so; at the opening it shows the place the draw gave, as the next status brings it.
let preOpening = null; // the status shown before the opening, which the countdown ticks over
function beforeOpening(s) {
  const opens = s.opens_at ? Date.parse(s.opens_at) : 0;
  preOpening = opens > now() ? s : null;
  const pos = $("position");
  if (!preOpening) {
    pos.classList.remove("opening");
    pos.setAttribute("aria-label", text("position_label"));
    return false;
  }
  pos.textContent = span(opens - now(), text);
  pos.classList.add("opening");
  pos.setAttribute("aria-label", text("opening_label"));
  $("ahead").textContent = text("before_opening");
  $("message").textContent = s.paused ? text("paused") : text("opens_line_at", { time: hourMinute(opens) });
  $("bar").hidden = true;
  $("progress").textContent = "";
  return true;
}
// Each second the countdown ticks; at the opening the place the draw gave is shown. Nothing else is
// redrawn: "Last updated" keeps the time of the last status received.
setInterval(() => {
  if (!preOpening || done) return;
  const opens = Date.parse(preOpening.opens_at);
  if (opens > now()) $("position").textContent = span(opens - now(), text);
  else show(preOpening);
}, 1000);

function lost() {
  if (!lostSince) lostSince = Date.now();
  $("lost").hidden = false;
}

function show(s) {
  if (s.error) {
    // A refused join (a busy store is retried before it comes here): the visitor holds no place.
    $("title").textContent = text("none_title");
    $("keep").hidden = true;
    $("message").textContent = failure(text, s);
    return;
  }
  connected();
  $("rejoin").hidden = true;
  $("elsewhere").hidden = true;
  $("keep").hidden = false;
  if (leave) leave.hidden = s.state !== "waiting";
  // The tab says the place too, for a visitor who waits in another tab.
  const placed = s.state === "waiting" && !(s.opens_at && Date.parse(s.opens_at) > now()); // a place, not a draw before the opening
  document.title = placed ? "#" + s.position + " · " + pageTitle : s.state === "admitted" ? text("turn") + " · " + pageTitle : pageTitle;
  if (s.state === "waiting") {
    left = false;
    $("title").textContent = text("title_waiting");
    if (beforeOpening(s)) return;
    const ahead = Math.max(0, s.position - 1);
    $("position").textContent = "#" + s.position;
    $("ahead").textContent = ahead === 0 ? text("ahead_none") : ahead === 1 ? text("ahead_one") : text("ahead_many", { n: ahead.toLocaleString(cfg.lang) });
    // An upper bound (no admission seen yet, every admitted visitor assumed to stay the whole session)
    // says so, lest a wait that then shrinks to seconds look like an error.
    const secs = s.eta_seconds || 0;
    // Paused, or the sale it waits for closed, no wait can be told: it depends on when that changes. A
    // sale still to open says when it does.
    $("message").textContent = s.drop_closed ? text("drop_closed") : s.paused ? text("paused")
      : s.drop_opens_at ? text("drop_opens", { time: hourMinute(Date.parse(s.drop_opens_at)) })
      : text(s.eta_upper_bound && secs >= 60 ? "eta_upto" : "eta", { eta: wait(secs) });
    progress(ahead);
    return;
  }
  sessionStorage.removeItem(aheadKey);
  if (s.state === "sold_out") {
    soldOut(true);
    return;
  }
  stop();
  $("position").textContent = "";
  $("ahead").textContent = "";
  $("bar").hidden = true;
  $("progress").textContent = "";
  if (s.state === "admitted") {
    done = true;
    $("keep").hidden = true;
    sessionStorage.removeItem(aheadKey);
    $("title").textContent = text("turn");
    if (cfg.target) {
      $("message").textContent = text("taking");
      const u = new URL(cfg.target, location.href); // a site URL, or a path back to a drop or auction here
      u.searchParams.set("rg_admission", s.admission_token);
      location.replace(u.toString());
    } else {
      $("message").textContent = text("admitted_until", { time: clock(new Date(s.expires_at)) });
    }
    return;
  }
  $("title").textContent = text(left ? "left_title" : "none_title");
  $("message").textContent = text(left ? "left" : "lapsed");
  $("keep").hidden = left;
  $("rejoin").hidden = false;
}

// giveUp leaves the line on a second press: the first asks, lest a stray tap lose a long wait.
const leavePress = secondPress((asking) => { leave.textContent = text(asking ? "leave_confirm" : "leave"); });
async function giveUp() {
  if (!leavePress()) return;
  leave.disabled = true;
  try {
    const r = await fetch(cfg.join.replace(/\/join$/, "/leave"), { method: "POST", credentials: "same-origin" });
    if (r.ok) {
      left = true;
      stop();
      show({ state: "none" });
    } else {
      $("message").textContent = failure(text, await r.json());
    }
  } catch (_) {
    $("message").textContent = text("error_retry");
  }
  leave.disabled = false;
}

// soldOut tells the visitor that what the line was for is gone. The room may yet follow a second batch:
// a page whose visitor waits (placed) keeps its feed, which keeps the place and brings it back moving if
// so, and the operator's word to the line; a page without a place looks at the status now and then, and
// joins once the line takes joins again.
let lookingForMore = false;
function soldOut(placed) {
  $("title").textContent = text("sold_out");
  $("message").textContent = text(placed ? "sold_out_kept" : "sold_out_text");
  if (leave) leave.hidden = !placed;
  $("keep").hidden = !placed;
  $("position").textContent = "";
  $("ahead").textContent = "";
  $("bar").hidden = true;
  $("progress").textContent = "";
  if (placed || lookingForMore) return;
  lookingForMore = true;
  lookNowAndThen(async () => {
    const r = await fetch(cfg.status, { credentials: "same-origin" });
    const s = await r.json();
    if (r.ok && s.state === "sold_out") announce(s.message || "");
    if (!r.ok || s.state === "sold_out") return false;
    lookingForMore = false;
    if (s.state === "none") join(false);
    else {
      show(s);
      if (s.state === "waiting") listen();
    }
    return true;
  });
}

function stop() {
  if (stream) stream.close();
  stream = null;
  clearTimeout(pollTimer);
}

// announce shows the room's message to its line as the operator changes it, and hides it when it is
// taken away; a template of a site's own may have no place for it.
function announce(message) {
  const el = $("room-message");
  if (!el) return;
  el.textContent = message;
  el.hidden = !message;
}

// listen holds the event stream; when it fails it shows the notice and, if the browser's own
// reconnection does not bring it back within a few seconds, polls the status instead, trying the
// stream again now and then.
function listen() {
  stop();
  if (done) return;
  stream = new EventSource(cfg.events);
  stream.addEventListener("status", (e) => show(JSON.parse(e.data)));
  stream.addEventListener("announcement", (e) => announce(JSON.parse(e.data).message));
  stream.addEventListener("open", connected);
  stream.addEventListener("error", () => {
    lost();
    if (stream && (stream.readyState === EventSource.CLOSED || Date.now() - lostSince > 5000)) {
      stop();
      poll(Date.now() + spread(STREAM_RETRY));
    }
  });
}

async function poll(retryStreamAt) {
  if (done) return;
  if (Date.now() >= retryStreamAt) {
    listen();
    return;
  }
  try {
    const r = await fetch(cfg.status, { credentials: "same-origin" });
    if (r.ok) show(await r.json());
    else lost();
  } catch (_) {
    lost();
  }
  if (!done && !stream) pollTimer = setTimeout(() => poll(retryStreamAt), spread(POLL_EVERY));
}

// solve works out a room's proof-of-work challenge in a Web Worker and returns "challenge:nonce".
function solve(c) {
  $("message").textContent = text("checking");
  root.dataset.checking = "shown";
  const started = performance.now();
  return new Promise((resolve) => {
    const worker = new Worker(cfg.base + "/assets/pow.js");
    worker.onmessage = (e) => {
      worker.terminate();
      root.dataset.solvedMs = String(Math.round(performance.now() - started));
      resolve(c.challenge + ":" + e.data.nonce);
    };
    worker.postMessage({ challenge: c.challenge, difficulty: c.difficulty });
  });
}

// invitation is what the link to a line by invitation carries: an invite code (?invite=) or the site's
// enqueue token for an account (?enqueue=), sent with the joins of this page until one takes it. The
// page joins with it only on a click: a link alone must not spend an invitation, nor make the visitor
// an account's visitor.
const invitation = (() => {
  const invite = fromLink("invite", "rg-invite-" + cfg.room), enqueue = fromLink("enqueue", "rg-enqueue-room-" + cfg.room);
  return {
    invite: invite.get(), enqueue: enqueue.get(), held: Boolean(invite.get() || enqueue.get()),
    taken: () => { invite.forget(); enqueue.forget(); },
  };
})();

async function join(switching, solution) {
  $("message").textContent = text("joining");
  const init = { method: "POST", credentials: "same-origin", headers: {} };
  if (invitation.invite) init.headers["Rushgate-Invite"] = invitation.invite;
  if (invitation.enqueue) init.headers["Rushgate-Enqueue"] = invitation.enqueue;
  if (switching) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify({ switch: true });
  }
  if (solution) init.headers["Rushgate-Challenge"] = solution;
  try {
    const r = await fetch(cfg.join, init);
    const s = await r.json();
    if (r.status === 401 && s.challenge && !solution) {
      join(switching, await solve(s));
      return;
    }
    if (r.status === 409 && s.error && s.error.code === "waiting_elsewhere") {
      elsewhere(s.error.room);
      return;
    }
    if (r.status === 410 && s.error && s.error.code === "sold_out") {
      soldOut(false);
      return;
    }
    if (r.status === 503 || r.status === 429) {
      // The store blipped or this address joins too fast: try again after the pause the server asks
      // for, spread over twice that so that a crowd does not come back all at once.
      $("message").textContent = text("busy_retry");
      const pause = (Number(r.headers.get("Retry-After")) || 2) * 1000;
      setTimeout(() => join(switching), pause * (1 + Math.random()));
      return;
    }
    // A room that takes no new joins, or is gone since the page was served (its operator deleted it),
    // has no line to offer: the page says so rather than ask for another try.
    if (s.error && (s.error.code === "room_closed" || s.error.code === "room_not_found")) {
      $("title").textContent = text("closed_title");
      $("message").textContent = text("closed");
      $("keep").hidden = true;
      $("rejoin").hidden = true;
      return;
    }
    // A join takes the invitation; a refused one drops it, lest every visit offer it again.
    if (r.ok || (s.error && (s.error.code === "invite_invalid" || s.error.code === "invalid_enqueue_token"))) invitation.taken();
    show(s);
    if (r.ok && (s.state === "waiting" || s.state === "sold_out")) listen();
  } catch (e) {
    lost();
    $("message").textContent = text("unreachable");
    setTimeout(() => join(switching), spread(3000));
  }
}

// elsewhere asks the visitor whether to give up the place it holds in another room.
function elsewhere(other) {
  const page = cfg.base + "/r/" + encodeURIComponent(other) + "?lang=" + encodeURIComponent(cfg.lang);
  $("title").textContent = text("elsewhere_title");
  $("position").textContent = "";
  $("message").textContent = "";
  $("keep").hidden = true;
  $("other").textContent = other;
  $("other").href = page;
  $("stay").href = page;
  $("elsewhere").hidden = false;
  $("switch").focus();
}

$("rejoin").addEventListener("click", () => join(false));
if (leave) leave.addEventListener("click", giveUp);
$("switch").addEventListener("click", () => join(true));
if (invitation.held && $("invited")) {
  // A page that predates the invitation's prompt (an old --templates room.html) joins at once.
  $("title").textContent = text("invited_title");
  $("message").textContent = "";
  $("keep").hidden = true;
  $("invited").hidden = false;
  $("accept").addEventListener("click", () => {
    $("invited").hidden = true;
    $("keep").hidden = false;
    join(false);
  });
  $("accept").focus();
} else {
  join(false);
}
