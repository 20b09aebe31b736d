// What the visitor pages share, loaded before each page's own script: the texts of the page's
// language, the server's clock and the countdown format, and an admission a room's line brings back in
// the URL.
"use strict";

const $ = (id) => document.getElementById(id);

// texts returns text(key, args) over the table in root's data-texts: the text in the page's language,
// its {name} placeholders filled from args.
function texts(root) {
  const T = JSON.parse(root.dataset.texts || "{}");
  return (key, args) => (T[key] || key).replace(/\{(\w+)\}/g, (_, k) => (args && k in args ? args[k] : ""));
}

// serverClock returns the server's clock as of the page's making (root's data-now, unix ms), run on by
// the browser's: a countdown to an opening or an end is the server's, whatever the browser's clock says.
// A --templates page without data-now runs on the browser's clock.
function serverClock(root) {
  const skew = Number(root.dataset.now) - Date.now() || 0;
  return () => Date.now() + skew;
}

// span formats a countdown: "01:02:03", with days in front when there are any, in the words of text (the
// page's language).
function span(ms, text) {
  const s = Math.max(0, Math.ceil(ms / 1000));
  const pad = (n) => String(n).padStart(2, "0");
  const d = Math.floor(s / 86400);
  const hms = pad(Math.floor((s % 86400) / 3600)) + ":" + pad(Math.floor((s % 3600) / 60)) + ":" + pad(s % 60);
  return d > 0 ? text("days", { n: d }) + " " + hms : hms; // days in the page's language: "1d", "1일"
}

// fit makes el's one line of text (a price of ₩1,250,000,000 on a phone) smaller until it fits el's
// width, down to half the size its style gives: a number must not break, nor widen the page.
function fit(el) {
  el.style.fontSize = "";
  const full = parseFloat(getComputedStyle(el).fontSize);
  for (let s = full; el.scrollWidth > el.clientWidth && s > full / 2; ) {
    s = Math.max(full / 2, s * 0.9);
    el.style.fontSize = s + "px";
  }
}

// carriedAdmission keeps an admission that the room's line sent back in the URL (rg_admission) for this
// tab and takes it out of the address bar. get reads it (null for a page behind no room); forget drops
// one the server no longer takes.
function carriedAdmission(room) {
  const key = "rg-admission-" + room;
  const u = new URL(location.href);
  const t = u.searchParams.get("rg_admission");
  if (t) {
    try { sessionStorage.setItem(key, t); } catch (_) { /* private mode */ }
    u.searchParams.delete("rg_admission");
    history.replaceState(null, "", u.pathname + u.search);
  }
  return { get: () => (room ? sessionStorage.getItem(key) : null), forget: () => sessionStorage.removeItem(key) };
}

// fromLink takes what a link brought in the URL parameter name (an invite code, the site's enqueue
// token) out of the address bar, where history and screenshots would keep it, and keeps it for this
// tab under key, so that a reload still has it. get reads it ("" for none); forget drops it, once a
// call has taken it or refused it; answered(status) does so unless the server was only too busy to
// look at it (503, 429), when the retry must send it again.
function fromLink(name, key) {
  const u = new URL(location.href);
  const v = u.searchParams.get(name) || "";
  if (v) {
    try { sessionStorage.setItem(key, v); } catch (_) { /* private mode: this page load keeps it */ }
    u.searchParams.delete(name);
    history.replaceState(null, "", u.pathname + u.search);
  }
  let kept = v;
  try { kept = sessionStorage.getItem(key) || v; } catch (_) { /* private mode */ }
  const forget = () => {
    kept = "";
    try { sessionStorage.removeItem(key); } catch (_) { /* private mode */ }
  };
  return { get: () => kept, forget, answered: (status) => { if (status !== 503 && status !== 429) forget(); } };
}

// secondPress makes a button act only on its second press within five seconds, since one stray tap
// must not give up a place or buy something: it returns a function for the button's click, true when
// the press should act. asking(true) is called when a first press asks, asking(false) when the
// question ends, by the second press or by the wait.
function secondPress(asking) {
  let armed = false;
  let timer = 0;
  return () => {
    clearTimeout(timer);
    armed = !armed;
    asking(armed);
    if (armed) timer = setTimeout(() => { armed = false; asking(false); }, 5000);
    return !armed;
  };
}

// failures are the words of the visitor pages for the API's refusals they have no words of their own
// for; failure picks them, in the page's language, never the API's English message.
const failures = {
  store_unavailable: "busy_retry", rate_limited: "busy_retry", identity_required: "identity_required",
  auction_closed: "ended", auction_not_started: "not_started", buy_now_unavailable: "buy_now_gone",
  invalid_amount: "invalid_amount", not_open: "not_open", sold_out: "sold_out_text",
  invite_required: "invite_required", invite_invalid: "invite_invalid", invalid_enqueue_token: "link_invalid",
  captcha_required: "captcha_required", captcha_failed: "captcha_required",
};
function failure(text, s) {
  const code = s && s.error && s.error.code;
  return text(failures[code] || "error_retry");
}

// spread returns a wait of about ms, drawn between half of it and one and a half times it. A crowd's
// pages lose their feed or their server in one moment (a deploy, a crash); waits drawn so bring them
// back over a while rather than all in one instant, and keep them from asking in step afterwards.
function spread(ms) {
  return ms * (0.5 + Math.random());
}

// spacedLooks returns the waits, in ms, between an ended page's looks at what its feed no longer
// brings: soon after the end, when an operator acts, then less and less often, about once a minute,
// each spread over its range (2.5 to 7.5 s first) so that a crowd on the page does not ask at once.
function spacedLooks() {
  let wait = 5000;
  return () => {
    const next = spread(wait);
    wait = Math.min(wait * 2, 60000);
    return next;
  };
}

// lookNowAndThen calls look now and then while the page is shown, spaced as spacedLooks spaces an ended
// page's looks so that a crowd on the page does not ask at once, and at once when the page is shown
// again, until look resolves to true. A look that throws is tried again at the next.
function lookNowAndThen(look) {
  const nextLook = spacedLooks();
  let timer = 0;
  let busy = false;
  const attempt = async () => {
    if (busy) return;
    busy = true;
    clearTimeout(timer);
    if (!document.hidden) {
      try {
        if (await look()) {
          document.removeEventListener("visibilitychange", attempt);
          return;
        }
      } catch (_) { /* the next look tries again */ }
    }
    busy = false;
    timer = setTimeout(attempt, nextLook());
  };
  document.addEventListener("visibilitychange", attempt);
  timer = setTimeout(attempt, nextLook());
}

// lookForLine looks now and then for the line of a room that did not exist when the page was served (a
// sale may be set up before its room), and calls found once it does, so that the page sends its
// visitors there without a reload. Each look is a HEAD of the room's page.
function lookForLine(base, room, found) {
  lookNowAndThen(async () => {
    const r = await fetch(base + "/r/" + encodeURIComponent(room), { method: "HEAD", credentials: "same-origin" });
    if (r.ok) found();
    return r.ok;
  });
}

// operatorSaid shows what the operator says on a drop's or an auction's page as its view now has it,
// the title and the message (element id message), either of which may change while the page is open,
// and returns the title the tab names, tab unless the view brings a new one.
function operatorSaid(view, message, tab) {
  if (view.title && $("title").textContent !== view.title) {
    $("title").textContent = view.title;
    tab = view.title;
  }
  const said = view.message || "";
  if ($(message) && $(message).textContent !== said) { // absent from an older --templates page
    $(message).textContent = said;
    $(message).hidden = !said;
  }
  return tab;
}
