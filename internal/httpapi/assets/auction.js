// An auction's page: the live price, the masked leader, the bids and a countdown that shows soft-close
// extensions as they happen, live over the auction's WebSocket feed (resumed after the last event it
// saw when it reconnects); bids, maximum bids and buy-now; and whether this visitor leads.
"use strict";

const root = document.getElementById("auction");
const cfg = { base: root.dataset.base || "", auction: root.dataset.auction, room: root.dataset.room, missing: !!root.dataset.lineMissing, lang: root.dataset.lang };
const text = texts(root);
const now = serverClock(root);
const api = cfg.base + "/v1/auctions/" + encodeURIComponent(cfg.auction);
// The site's enqueue token for one of its accounts (?enqueue= in its link), for an auction that counts
// the site's accounts: the bids are then the account's.
const vouch = fromLink("enqueue", "rg-enqueue-auction-" + cfg.auction);

let view = null; // the auction as last known
// Buying now is a purchase in one press: the first press only asks, for five seconds.
let buyAsking = false;
const buyPress = secondPress((asking) => { buyAsking = asking; render(); });
let wasOver = null; // whether the auction was over at the last render: its end is announced once
let seq = 0; // the last event applied
// This browser's bidder (its visitor), and whether it bid on this auction: from this tab's bids, or
// from the bids the page shows, for a tab opened later. Only a visitor who bid is told it was outbid
// or did not win; the winner is told it won whichever tab it looks from.
const me = { key: "rg-bidder-" + cfg.auction, bid: "rg-bid-" + cfg.auction };
// Amounts are integer minor units (cents): the page shows them as the currency writes them (€10.50,
// ₩31,000) and reads a bid as a person types a price, in the currency's whole units (10.5).
let currency = { code: "", format: null, unit: 1 }; // unit: minor units in one whole unit
function setCurrency(code) {
  if (!code || code === currency.code) return;
  try {
    const format = new Intl.NumberFormat(cfg.lang, { style: "currency", currency: code });
    currency = { code, format, unit: 10 ** format.resolvedOptions().maximumFractionDigits };
  } catch (_) {
    currency = { code, format: null, unit: 1 }; // a code this browser does not know: minor units as they are
  }
  $("amount").step = String(1 / currency.unit);
  $("amount").min = String(1 / currency.unit);
  $("amount").inputMode = currency.unit > 1 ? "decimal" : "numeric";
}
const money = (n) => (currency.format ? currency.format.format(n / currency.unit) : n.toLocaleString(cfg.lang) + " " + currency.code);
const whole = (n) => (n / currency.unit).toFixed(Math.round(Math.log10(currency.unit))); // minor units as typed
const typed = () => Math.round(Number($("amount").value) * currency.unit); // what was typed, in minor units
const mask = (id) => (id ? id.slice(0, 4) + "…" + id.slice(-2) : "");
const myID = () => sessionStorage.getItem(me.key);
const didBid = () => sessionStorage.getItem(me.bid) === "1";
const bidHere = () => sessionStorage.setItem(me.bid, "1");

// learnMe asks which visitor this browser is, and whether it bid here, when the tab does not know it
// yet (a new tab, the browser reopened, a first bid that a maximum outbid at once): its bids and
// standing are then told as its own, "You have been outbid." and "You won it." included, however many
// bids came since its own. A browser that holds no visitor has no bids to tell.
async function learnMe() {
  if (myID() && didBid()) return;
  try {
    const r = await fetch(api + "/me", { credentials: "same-origin" });
    const s = r.ok ? await r.json() : {};
    if (s.visitor_id) sessionStorage.setItem(me.key, s.visitor_id);
    if (s.bid) bidHere();
  } catch (_) { /* the next bid that leads tells it */ }
  render();
}

const carried = carriedAdmission(cfg.room);
const admission = carried.get;

// bids says how many bids there were, "1 bid" rather than "1 bids".
const bids = (n) => (n === 1 ? text("bids_one") : text("bids_count", { n: n.toLocaleString(cfg.lang) }));

// standing tells this visitor where it stands: leading or outbid while the auction runs, won or not once
// it is over. A visitor who never bid is told nothing; once the auction is over, its empty line is not
// drawn either (while it runs, the line keeps its room so that the page does not jump at a first bid).
// It returns the text's key, "" when it said nothing.
function standing(over) {
  const el = $("standing");
  const mine = myID();
  el.hidden = false;
  let said = "", won = false;
  if (view && mine && over) {
    won = view.winner === mine;
    said = won ? (view.status === "sold" ? "you_bought" : "you_won") : didBid() ? "you_lost" : "";
  } else if (view && mine && view.leader) {
    won = view.leader === mine;
    said = won ? "leading" : didBid() ? "outbid" : "";
  }
  el.textContent = said ? text(said) : "";
  el.className = "standing" + (said ? (won ? " leading" : " outbid") : "");
  if (over && !said) el.hidden = true;
  return said;
}

// The tab's title says the price and where the visitor stands, so that a bidder with the page in a
// background tab sees at a glance that it was outbid, as it sees the place in a waiting room's tab.
let pageTitle = document.title; // what is sold, after the tab's tag and the price
const TAB = { leading: "tab_leading", outbid: "tab_outbid", you_won: "tab_won", you_bought: "tab_won" };
function tabTitle(said, over) {
  const tag = TAB[said] || (over ? "tab_over" : "");
  document.title = [tag && text(tag), money(view.price), pageTitle].filter(Boolean).join(" · ");
}

function render() {
  if (!view) return;
  setCurrency(view.currency);
  // The operator may correct the title, or tell the bidders something, while the page is open.
  pageTitle = operatorSaid(view, "auction-message", pageTitle);
  const t = now();
  const ends = Date.parse(view.ends_at);
  const starts = Date.parse(view.starts_at);
  const over = view.status === "closed" || view.status === "sold" || t >= ends;
  $("price").textContent = money(view.price);
  fit($("price"));
  // Once it is over, the price is final if someone won it, else the highest bid (below the reserve),
  // else only where it started (the label is absent from an older --templates page).
  if ($("price-label")) {
    $("price-label").textContent = text(!over ? "price" : view.winner ? "final_price" : view.leader ? "highest_bid" : "start_price");
  }
  // Once it is over there is no leader, only the winner the line below names.
  if (!over) $("leader").textContent = view.leader ? text("leader") + ": " + mask(view.leader) + " · " + bids(view.bid_count) : text("no_bids");
  else if (view.bid_count) $("leader").textContent = bids(view.bid_count);
  else $("leader").textContent = view.status === "sold" ? "" : text("no_bids_ended"); // sold outright: the line below says to whom
  if (view.status === "sold") $("when").textContent = text("sold_to", { who: mask(view.winner), price: money(view.final_price || view.price) });
  else if (over) $("when").textContent = view.winner ? text("won_by", { who: mask(view.winner), price: money(view.final_price || view.price) }) : text(view.reserve_met ? "ended" : "ended_unmet");
  else if (t < starts) $("when").textContent = text("starts_in", { time: span(starts - t, text) });
  else $("when").textContent = text("ends_in", { time: span(ends - t, text) });
  const min = view.min_next_bid || 0;
  $("min").textContent = over || !min ? "" : text("min_next", { amount: money(min) });
  if ($("reserve")) $("reserve").hidden = over || view.reserve_met !== false; // absent from an older --templates page
  if (!$("amount").value || typed() < min) $("amount").placeholder = min ? whole(min) : "";
  const gated = cfg.room && !admission();
  $("gate").hidden = !gated;
  if (gated) {
    // A room not made yet has no line to send anyone to: the page says so instead.
    if ($("gate-text")) $("gate-text").textContent = text(cfg.missing ? "line_not_open_auction" : "need_line_auction");
    $("line").hidden = cfg.missing;
    $("line").href = cfg.base + "/r/" + encodeURIComponent(cfg.room) + "?return_to=" + encodeURIComponent(cfg.base + "/a/" + cfg.auction) + "&lang=" + cfg.lang;
  }
  if (wasOver === false && over) {
    $("announce").textContent = $("when").textContent; // who won, or that it ended
    $("result").textContent = ""; // what the last press did ("Your bid was taken.") is past: the standing says how it ended
  }
  if (over) $("extended").hidden = true; // a later end is no news once it has come
  wasOver = over;
  $("bidform").hidden = over;
  // Before the start a bid could only be refused: the button waits for the countdown.
  const early = t < starts;
  $("bid").disabled = gated || early;
  $("bid").textContent = text($("proxy").checked ? "bid_max" : "bid");
  $("buynow").hidden = over || early || !view.buy_now_price;
  if (view.buy_now_price) {
    $("buynow").textContent = text(buyAsking ? "buy_now_confirm" : "buy_now", { amount: money(view.buy_now_price) });
  }
  tabTitle(standing(over), over);
}

// addHistory shows a bid at the top of the history, or below the rest when it is older than them.
function addHistory(e, older) {
  const li = document.createElement("li");
  li.textContent = money(e.price) + " · " + mask(e.bidder) + (e.proxy ? " " + text("auto_bid") : "") + " · " +
    new Date(e.at).toLocaleTimeString(cfg.lang);
  if (e.bidder && e.bidder === myID()) {
    li.className = "mine";
    bidHere();
  }
  if (older) $("history").append(li);
  else $("history").prepend(li);
  if ($("history-title")) $("history-title").hidden = false; // a heading over no bids said nothing
}

// apply takes one event of the feed into the view.
function apply(e) {
  if (e.seq <= seq) return; // already seen, before a reconnection
  seq = e.seq;
  if (!view) return;
  if (e.seq <= view.seq) { // missed while away, and already in the snapshot the reconnection brought
    if (e.kind === "bid") addHistory(e);
    return;
  }
  view.seq = e.seq;
  view.price = e.price;
  view.ends_at = e.ends_at;
  if (e.kind === "bid") {
    view.leader = e.bidder;
    view.bid_count = (view.bid_count || 0) + 1;
    // What the bid leaves open comes with it, by the server's rules: no read per event.
    view.min_next_bid = e.min_next_bid;
    view.buy_now_price = e.buy_now_price || null;
    view.reserve_met = e.reserve_met;
    addHistory(e);
  } else if (e.kind === "extended") {
    $("extended").hidden = false;
    $("extended").textContent = text("extended", { time: new Date(e.ends_at).toLocaleTimeString(cfg.lang) });
  } else if (e.kind === "closed") {
    view.status = "closed";
    view.winner = e.bidder;
    view.final_price = e.price;
  } else if (e.kind === "sold") {
    view.status = "sold";
    view.winner = view.leader = e.bidder; // the buyer holds the lot, as the server's view says
    view.final_price = e.price;
  } else if (e.kind === "updated") {
    reread();
  }
  render();
}

// reread reads the view again for what an "updated" event says changed, the title and the message,
// which the event does not carry; each page at a random point of the next three seconds, so that a
// crowd on the page does not ask at once.
function reread() {
  setTimeout(async () => {
    try {
      const r = await fetch(api, { credentials: "same-origin" });
      if (!r.ok || !view) return;
      const v = await r.json();
      view.title = v.title;
      view.message = v.message;
      render();
    } catch (_) { /* the next reconnection's snapshot has them */ }
  }, Math.random() * 3000);
}

let socket = null;
let retry = 500;
// lost tells the bidder that the page no longer hears the auction, whose price may have moved, until
// the feed is back (a --templates page without the notice goes without).
function lost(on) {
  if ($("lost")) $("lost").hidden = !on;
}
function connect() {
  const u = new URL(api + "/live", location.href);
  u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
  if (seq > 0) u.searchParams.set("after", String(seq));
  socket = new WebSocket(u);
  socket.addEventListener("open", () => { retry = 500; $("live").hidden = false; });
  socket.addEventListener("message", (m) => {
    const e = JSON.parse(m.data);
    if (e.type === "snapshot") {
      lost(false);
      view = e;
      if (seq === 0) {
        seq = e.seq;
        loadHistory(e.seq); // once the currency is known, and below the bids the feed brings meanwhile
      }
      render();
      return;
    }
    apply(e);
  });
  socket.addEventListener("close", (ev) => {
    $("live").hidden = true;
    // A normal closure after the close or the sale: the feed has said all it will; the page stays as is,
    // looking now and then for what an operator may still change.
    if (ev.code === 1000 && view && (view.status === "closed" || view.status === "sold")) {
      watchEnded();
      return;
    }
    lost(true);
    setTimeout(connect, spread(retry));
    retry = Math.min(retry * 2, 10000);
  });
}

// watchEnded looks again at an auction whose feed has ended: an unsold lot may be put up again under
// its id, and an operator may still correct the title or have a word for the bidders ("the winner has
// been contacted"), which the ended feed does not bring. It looks soon after the end, then less and
// less often (spacedLooks). A new sale shows as the page opened anew, with no bid of this browser's on
// it.
const nextLook = spacedLooks();
function watchEnded() {
  setTimeout(async () => {
    try {
      const r = await fetch(api, { credentials: "same-origin" });
      if (r.status === 404) return; // deleted: nothing more to show
      const s = r.ok ? await r.json() : null;
      if (s && s.status !== "closed" && s.status !== "sold") {
        sessionStorage.removeItem(me.bid);
        location.reload();
        return;
      }
      if (s && (s.title !== view.title || s.message !== view.message)) {
        view.title = s.title;
        view.message = s.message;
        render();
      }
    } catch (_) { /* looked at again later */ }
    watchEnded();
  }, nextLook());
}

// loadHistory shows the bids among the last 100 events up to the snapshot's, newest first.
async function loadHistory(upTo) {
  try {
    const r = await fetch(api + "/bids?limit=100&after=" + Math.max(0, upTo - 100));
    if (!r.ok) return;
    const s = await r.json();
    for (const e of s.bids.filter((b) => b.seq <= upTo).reverse()) addHistory(e, true);
  } catch (_) { /* the feed brings new bids */ }
}

async function post(path, body) {
  if (admission()) body.admission_token = admission();
  const headers = { "Content-Type": "application/json" };
  if (vouch.get()) headers["Rushgate-Enqueue"] = vouch.get();
  const r = await fetch(api + path, { method: "POST", credentials: "same-origin", headers, body: JSON.stringify(body) });
  vouch.answered(r.status); // the account's visitor is now the cookie, or the token was refused
  return { r, s: await r.json() };
}

// A phone turned on its side has room for the price at its full size again.
addEventListener("resize", () => fit($("price")));
$("proxy").addEventListener("change", () => {
  $("amount-label").textContent = text($("proxy").checked ? "your_max" : "your_bid");
  render();
});
$("bidform").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const amount = typed();
  $("bid").disabled = true;
  try {
    const { r, s } = await post("/bids", $("proxy").checked ? { max_amount: amount } : { amount });
    if (r.status === 201) {
      bidHere();
      if (s.leading) sessionStorage.setItem(me.key, s.auction.leader);
      else learnMe(); // taken but outbid at once (a maximum above it): the visitor the bid made or carried
      $("result").textContent = text("bid_taken");
      if (!view || s.auction.seq > view.seq) view = s.auction; // the feed may have brought later events already
    } else if (s.error && s.error.code === "bid_too_low") {
      $("result").textContent = text("too_low", { amount: money(s.error.min_next_bid) });
    } else if (s.error && s.error.code === "not_admitted") {
      carried.forget();
      $("result").textContent = text("need_line_auction");
    } else {
      $("result").textContent = failure(text, s);
    }
  } catch (_) {
    $("result").textContent = text("error_retry");
  }
  $("bid").disabled = false;
  render();
});
$("buynow").addEventListener("click", async () => {
  if (!buyPress()) return;
  $("buynow").disabled = true;
  try {
    const { r, s } = await post("/buy-now", {});
    if (r.ok) {
      sessionStorage.setItem(me.key, s.winner);
      bidHere();
      if (!view || s.seq > view.seq) view = s;
    } else {
      $("result").textContent = failure(text, s);
    }
  } catch (_) {
    $("result").textContent = text("error_retry");
  }
  $("buynow").disabled = false;
  render();
});

if (cfg.missing) lookForLine(cfg.base, cfg.room, () => { cfg.missing = false; render(); });
learnMe().finally(connect); // first, so that the history marks its own bids
setInterval(render, 250);
