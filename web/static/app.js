// fenceview dashboard: keeps the server-rendered pages live over the
// /v1/events websocket. Everything a client sent (ids, holders, sources,
// reasons) is inserted with textContent or setAttribute, never as HTML.
(function () {
  'use strict';

  var body = document.body;
  var page = body.dataset.page || '';
  var filter = body.dataset.resource || '';
  var lastSeq = Number(body.dataset.lastSeq || 0);
  var SVG = 'http://www.w3.org/2000/svg';
  var FEED_MAX = 200;
  var REFUSALS_MAX = 6; // dashboard.refusalsShown
  var keyNames = {};
  try { keyNames = JSON.parse(body.dataset.keyNames || '{}') || {}; } catch (err) { keyNames = {}; }

  // ---- helpers ---------------------------------------------------------

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // resourceURL matches the server's: one escaped path segment, and the
  // query form for "." and "..", which browsers would resolve away.
  function resourceURL(id) {
    if (id === '.' || id === '..') return '/resource?id=' + encodeURIComponent(id);
    return '/resources/' + encodeURIComponent(id);
  }

  function pad(n, w) { return String(n).padStart(w || 2, '0'); }

  function exactUTC(d) {
    return d.getUTCFullYear() + '-' + pad(d.getUTCMonth() + 1) + '-' + pad(d.getUTCDate()) + ' ' +
      pad(d.getUTCHours()) + ':' + pad(d.getUTCMinutes()) + ':' + pad(d.getUTCSeconds()) + '.' +
      pad(d.getUTCMilliseconds(), 3) + ' UTC';
  }

  // relative is how long ago (or from now) an instant is, in words.
  function relative(d) {
    var s = Math.round((Date.now() - d.getTime()) / 1000);
    var future = s < 0;
    s = Math.abs(s);
    var text;
    if (s < 5) return 'just now';
    if (s < 60) text = s + ' s';
    else if (s < 3600) text = Math.floor(s / 60) + ' min';
    else if (s < 86400) text = Math.floor(s / 3600) + ' h';
    else text = Math.floor(s / 86400) + ' d';
    return future ? 'in ' + text : text + ' ago';
  }

  // group is a count or token (a number, or its decimal text) in the one
  // format of every number on the page, digits in groups of three (the
  // server's dashboard.group).
  function group(n) {
    return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  }

  // plural is a count with its noun, "1 lock" and "2 locks" (view.go: plural).
  function plural(n, one, many) { return group(n) + ' ' + (String(n) === '1' ? one : many); }

  // ungroup reads a grouped number back.
  function ungroup(text) { return Number(String(text).replace(/,/g, '')) || 0; }

  // ---- exact integers ----------------------------------------------------
  // Tokens and marks are int64, and a JavaScript number holds integers
  // exactly only up to 2^53: JSON.parse reads 9007199254740993 as
  // 9007199254740992. So every event and answer is read with parseJSON,
  // which keeps each integer of 16 or more digits as its decimal string
  // (group shows it as it is), and tokens are compared as BigInts (big).

  // One match per JSON string or number, whole: digits inside a string, a
  // fraction or an exponent are never taken for an integer of their own.
  var JSON_TOKEN = /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;

  function parseJSON(text) {
    return JSON.parse(String(text).replace(JSON_TOKEN, function (m) {
      return /^-?\d{16,}$/.test(m) ? '"' + m + '"' : m;
    }));
  }

  // big is a token, mark or count (a number or its decimal string) as a
  // BigInt; 0 when missing.
  var ZERO = BigInt(0);
  function big(v) {
    try { return v == null || v === '' ? ZERO : BigInt(v); } catch (err) { return ZERO; }
  }

  var CLOCK = { hour: '2-digit', minute: '2-digit', second: '2-digit' };
  var MINUTE = { hour: '2-digit', minute: '2-digit' };
  var DATE = { year: 'numeric', month: 'short', day: 'numeric' };

  // localize shows an instant one way everywhere, in the viewer's zone: the
  // server writes every time as UTC (a <time datetime>, or an axis label's
  // data-datetime) and this formats all of them, rows and axes alike, with
  // the same clock. Modes (data-local): "time" and "datetime" are the time
  // of day, with the date when not today, and how long ago (they differ
  // only in what the server writes for a browser without the script);
  // "clock" the time of day alone, "minute" hours and minutes, "day" the
  // date and hours and minutes. A <time> keeps the exact UTC on hover.
  function localize(t) {
    var d = new Date(t.getAttribute('datetime') || t.getAttribute('data-datetime'));
    if (isNaN(d.getTime())) return;
    var mode = t.getAttribute('data-local');
    var clock = d.toLocaleTimeString(undefined, CLOCK);
    switch (mode) {
      case 'clock': t.textContent = clock; break;
      case 'minute': t.textContent = d.toLocaleTimeString(undefined, MINUTE); break;
      case 'day':
        t.textContent = d.toLocaleDateString(undefined, { month: 'short', day: 'numeric' }) + ', ' + d.toLocaleTimeString(undefined, MINUTE);
        break;
      default:
        var today = new Date().toDateString() === d.toDateString();
        var date = today ? '' : d.toLocaleDateString(undefined, DATE) + ', ';
        t.textContent = date + clock + ' \u00b7 ' + relative(d);
    }
    if (t.localName === 'time') t.title = exactUTC(d);
  }

  function localizeAll(root) {
    root.querySelectorAll('[data-local]').forEach(localize);
  }

  function timeEl(iso, mode) {
    var t = el('time');
    t.setAttribute('datetime', iso);
    t.dataset.local = mode;
    t.textContent = iso;
    localize(t);
    return t;
  }

  var ICONS = {
    grant: [['circle', { cx: 6, cy: 6, r: 4.5 }]],
    renew: [['circle', { cx: 6, cy: 6, r: 3.8, fill: 'none', 'stroke-width': 1.8 }]],
    release: [['rect', { x: 2, y: 2, width: 8, height: 8, fill: 'none', 'stroke-width': 1.8 }]],
    expire: [['path', { d: 'M6 1.5 L10.8 10 H1.2 Z', fill: 'none', 'stroke-width': 1.6 }]],
    accept: [['path', { d: 'M1.8 6.4 L4.8 9.2 L10.4 2.8', fill: 'none', 'stroke-width': 2 }]],
    reject: [['path', { d: 'M2.2 2.2 L9.8 9.8 M9.8 2.2 L2.2 9.8', fill: 'none', 'stroke-width': 2 }]],
    alarm: [['path', { d: 'M6 1 L11.2 10.6 H0.8 Z' }]],
    reset: [['path', { d: 'M6 1.2 L10.8 6 L6 10.8 L1.2 6 Z', fill: 'none', 'stroke-width': 1.6 }]],
    proclaim: [['path', { d: 'M2.5 11 V1.5 H9.5 L8 3.8 L9.5 6 H2.5', fill: 'none', 'stroke-width': 1.5 }]]
  };

  function icon(kind) {
    var s = document.createElementNS(SVG, 'svg');
    s.setAttribute('class', 'icon icon-' + kind);
    s.setAttribute('viewBox', '0 0 12 12');
    s.setAttribute('aria-hidden', 'true');
    s.setAttribute('focusable', 'false');
    (ICONS[kind] || []).forEach(function (p) {
      var c = document.createElementNS(SVG, p[0]);
      Object.keys(p[1]).forEach(function (k) { c.setAttribute(k, String(p[1][k])); });
      s.appendChild(c);
    });
    return s;
  }

  // label and detail: the same words as the server's view.go.
  function label(e) {
    switch (e.type) {
      case 'grant': return 'granted';
      case 'renew': return 'renewed';
      case 'release': return 'released';
      case 'expire': return 'expired';
      case 'accept': return e.access === 'read' ? 'read' : 'accepted';
      case 'reject':
        if (e.access === 'read') return e.reason === 'stale-token' ? 'stale read' : 'read refused';
        return e.reason === 'stale-token' ? 'stale' : 'refused';
      case 'alarm': return 'alarm';
      case 'reset': return 'reset';
      case 'recover': return 'recovered';
      case 'proclaim': return 'proclaimed';
    }
    return String(e.type);
  }

  // sourceText shows "key:<id>/label" as "<key name>/label" when the page
  // knows the name (dashboard.KeyNames.Source); the id stays in a title.
  function sourceText(source) {
    var m = /^key:([^/]+)(\/.*)?$/.exec(source || '');
    if (m && Object.prototype.hasOwnProperty.call(keyNames, m[1])) return keyNames[m[1]] + (m[2] || '');
    return source || '';
  }

  function from(source) { return source ? ' from ' + sourceText(source) : ''; }

  // detailEl is an event's detail line, with the recorded source on hover
  // when a key's name stands in for it.
  function detailEl(tag, e, text) {
    var d = el(tag, 'detail', text);
    if (e.source && sourceText(e.source) !== e.source) d.title = e.source;
    return d;
  }

  function detail(e) {
    var tok = 'token ' + group(e.token || 0);
    switch (e.type) {
      case 'grant': return tok + ' to ' + (e.holder || '');
      case 'renew': return tok + ' renewed by ' + (e.holder || '');
      case 'release': return tok + ' released by ' + (e.holder || '');
      case 'expire':
        return tok + ' of ' + (e.holder || '') + (e.reason === 'forced' ? ' force-expired' : ': lease ran out') +
          (e.lockDelayMs > 0 ? '; lock-delay ' + group(e.lockDelayMs) + ' ms' : '');
      case 'proclaim': return 'term ' + group(e.token || 0) + ': ' + (e.holder || '') + ' set its value';
      case 'accept': return tok + ' accepted' + (e.access === 'read' ? ' for a read' : '') + from(e.source);
      case 'reject':
        return 'token ' + group(e.presented) + ' refused' + (e.access === 'read' ? ' for a read' : '') + ' (' + e.reason + '), needs \u2265 ' + group(e.required) + from(e.source);
      case 'alarm': return alarmEventText(e) + from(e.source);
      case 'reset':
        return 'token counter raised to ' + group(e.token || 0) + ' (floor ' + group(e.required) + ') by ' + sourceText(e.source);
      case 'recover':
        return 'recovered by ' + sourceText(e.source) + ': counter ' + group(e.required) + ' \u2192 ' + group(e.token || 0) + ', mark ' + group(e.presented) + ' \u2192 \u2264 ' + group(e.token || 0);
    }
    return '';
  }

  function badge(e) {
    var b = el('span', 'badge badge-' + e.type);
    b.appendChild(icon(e.type));
    b.appendChild(document.createTextNode(label(e)));
    return b;
  }

  // ---- lease countdowns -----------------------------------------------
  // Deadlines are kept on the browser's monotonic clock from the server's
  // "remaining" figure, so a skewed viewer clock cannot show a wrong lease.

  var deadlines = new Map();

  function remainingText(ms) {
    if (ms <= 0) return 'expired';
    var s = Math.ceil(ms / 1000);
    if (s >= 3600) return Math.floor(s / 3600) + 'h ' + pad(Math.floor(s % 3600 / 60)) + 'm left';
    if (s >= 60) return Math.floor(s / 60) + 'm ' + pad(s % 60) + 's left';
    return s + 's left';
  }

  function startCountdown(span, ms) {
    deadlines.set(span, performance.now() + ms);
    paint(span);
  }

  function paint(span) {
    var left = deadlines.get(span) - performance.now();
    var was = span.classList.contains('gone');
    span.textContent = remainingText(left);
    span.classList.toggle('low', left > 0 && left < 5000);
    span.classList.toggle('gone', left <= 0);
    if (left <= 0 && !was) updateStats(); // a lease ran out: one lock fewer held
  }

  function tick() {
    deadlines.forEach(function (_, span) {
      if (!span.isConnected) { deadlines.delete(span); return; }
      paint(span);
    });
  }

  function countdown(ms) {
    var span = el('span', 'countdown');
    span.dataset.remainingMs = String(ms);
    startCountdown(span, ms);
    return span;
  }

  // ---- warnings ---------------------------------------------------------

  var behindBanner = document.querySelector('[data-testid="banner-behind"]');
  var burstBanner = document.querySelector('[data-testid="banner-burst"]');
  var connBanner = document.querySelector('[data-testid="banner-connection"]');
  var behind = new Map(); // resource id -> {last, hwm}

  if (behindBanner) {
    behindBanner.querySelectorAll('li[data-resource]').forEach(function (li) {
      behind.set(li.dataset.resource, null);
    });
  }

  // isBehind matches the server's: the issuer's alarm, or the plain facts.
  function isBehind(r) {
    var last = big(r.lastToken);
    return big(r.counterAlarm) > ZERO || (last > ZERO && big(r.highWaterMark) > last);
  }

  // alarmText: the same figure and words as the server's (view.go).
  function alarmMark(r) {
    var last = big(r.lastToken), hwm = big(r.highWaterMark), alarm = big(r.counterAlarm);
    if (last > ZERO && hwm > last) return alarm > hwm ? alarm : hwm;
    return alarm;
  }

  function alarmText(r) {
    var mark = alarmMark(r), last = big(r.lastToken), hwm = big(r.highWaterMark);
    if (last === ZERO) {
      var before = 'token ' + group(mark) + ' in use at a guard before this server issued any';
      return hwm < mark ? before + '; the mark stays at ' + group(hwm) : before;
    }
    if (mark <= last) {
      return 'token ' + group(mark) + ' was in use at a guard above the token counter, last token issued ' + group(r.lastToken);
    }
    return 'token ' + group(mark) + ' in use at a guard, last token issued ' + group(r.lastToken);
  }

  // alarmEventText: an alarm event in words, the server's (view.go).
  var MAX_REPORTED_MARK = BigInt('4611686018427387904'); // fenceview.MaxReportedMark, 2^62
  function alarmEventText(e) {
    var mark = 'token ' + group(e.token || 0) + ' in use at a guard';
    if (e.reason === 'foreign-mark' && big(e.token) > MAX_REPORTED_MARK) {
      return mark + ', above any mark a report may set; the mark stays at ' + group(MAX_REPORTED_MARK) + ' (' + e.reason + ')';
    }
    if (e.reason === 'foreign-mark') return mark + ' before this server issued any; its first token goes above it (' + e.reason + ')';
    return mark + ', last token issued ' + group(e.required || 0) + ' (' + e.reason + ')';
  }

  function setBehind(r) {
    var was = behind.has(r.resourceId);
    var is = isBehind(r);
    if (!is && !was) return;
    if (is) behind.set(r.resourceId, r); else behind.delete(r.resourceId);
    var list = behindBanner.querySelector('.behind-list');
    var items = list.querySelectorAll('li[data-resource]');
    items.forEach(function (li) {
      if (li.dataset.resource === r.resourceId) li.remove();
    });
    if (is) {
      var li = el('li');
      li.dataset.resource = r.resourceId;
      var a = el('a', '', r.resourceId);
      a.href = resourceURL(r.resourceId);
      li.appendChild(a);
      li.appendChild(document.createTextNode(': ' + alarmText(r)));
      list.appendChild(li);
    }
    behindBanner.hidden = behind.size === 0;
  }

  // A burst of stale writes, counted as they arrive.
  var burstN = Number(body.dataset.burstThreshold || 0);
  var burstWindow = Number(body.dataset.burstWindowMs || 60000);
  var stale = [];
  if (burstBanner && !burstBanner.hidden) {
    for (var i = 0; i < burstN; i++) stale.push(performance.now());
  }

  function checkBurst() {
    if (!burstBanner || burstN <= 0) return;
    var now = performance.now();
    while (stale.length && now - stale[0] > burstWindow) stale.shift();
    var on = stale.length >= burstN;
    if (on) {
      burstBanner.querySelector('.burst-text').textContent = stale.length +
        ' stale-token rejections in the last ' + Math.round(burstWindow / 1000) + ' s: a client is writing with an old token.';
    }
    burstBanner.hidden = !on;
  }

  // ---- overview --------------------------------------------------------

  function feedItem(e) {
    var li = el('li', 'feed-item type-' + e.type + ' is-new');
    li.dataset.testid = 'feed-item';
    li.dataset.seq = String(e.seq);
    li.dataset.type = e.type;
    li.dataset.resource = e.resourceId;
    li.appendChild(badge(e));
    var a = el('a', 'res', e.resourceId);
    a.href = resourceURL(e.resourceId);
    li.appendChild(a);
    li.appendChild(detailEl('span', e, detail(e)));
    li.appendChild(timeEl(e.at, 'time'));
    return li;
  }

  function findRow(id) {
    var rows = document.querySelectorAll('tr[data-testid="resource-row"]');
    for (var i = 0; i < rows.length; i++) {
      if (rows[i].dataset.resource === id) return rows[i];
    }
    return null;
  }

  function newRow(id) {
    var tr = el('tr');
    tr.dataset.testid = 'resource-row';
    tr.dataset.resource = id;
    var th = el('th', 'id');
    th.scope = 'row';
    var cell = el('span', 'id-cell');
    var a = el('a', 'trunc', id);
    a.href = resourceURL(id);
    a.title = id;
    a.dataset.testid = 'resource-link';
    cell.appendChild(a);
    th.appendChild(cell);
    tr.appendChild(th);
    [['hwm', 'num'], ['last', 'num opt'], ['holder', ''], ['lease', ''], ['spark', 'opt'], ['accepted', 'num opt'], ['rejected', 'num']].forEach(function (c) {
      var td = el('td', c[1]);
      td.dataset.col = c[0];
      tr.appendChild(td);
    });
    // Keep the table ordered by id, as the server renders it.
    var tbody = document.querySelector('table[data-testid="resources"] tbody');
    var rows = tbody.querySelectorAll('tr[data-testid="resource-row"]');
    var before = null;
    for (var i = 0; i < rows.length; i++) {
      if (rows[i].dataset.resource > id) { before = rows[i]; break; }
    }
    tbody.insertBefore(tr, before);
    tbody.closest('table').hidden = false; // an empty table is hidden, header and all
    var empty = document.querySelector('[data-testid="no-resources"]');
    if (empty) empty.remove();
    return tr;
  }

  function holderText(r) {
    if (!r.holder) return 'free';
    return r.holdCount > 1 ? r.holder + ' \u00d7' + group(r.holdCount) : r.holder;
  }

  // numCell matches the server's Num: the number, cut to its last digits
  // when long, whole on hover.
  function numCell(td, n) {
    var s = el('span', 'n', group(n));
    s.title = group(n);
    td.textContent = '';
    td.appendChild(s);
  }

  function fill(td, text, cls) {
    td.textContent = text;
    if (cls !== undefined) td.className = cls;
  }

  // The server sorts, searches and pages the table; the script only
  // inserts a row where it knows the place: the first page in id order.
  function mayAdd(id) {
    var table = document.querySelector('table[data-testid="resources"]');
    if (!table || table.dataset.liveAdd !== 'true') return false;
    return id.indexOf(table.dataset.prefix || '') === 0;
  }

  function updateRow(r, lock) {
    var tr = findRow(r.resourceId);
    if (!tr) {
      if (!mayAdd(r.resourceId)) { setBehind(r); return; }
      tr = newRow(r.resourceId);
    }
    var cell = function (c) { return tr.querySelector('td[data-col="' + c + '"]'); };
    var behindNow = isBehind(r);
    tr.classList.toggle('is-behind', behindNow);
    numCell(cell('hwm'), r.highWaterMark);
    numCell(cell('last'), r.lastToken);
    var idCell = tr.querySelector('th.id .id-cell');
    var tag = idCell.querySelector('.tag');
    if (tag) tag.remove();
    if (behindNow) idCell.appendChild(el('span', 'tag danger', 'behind'));
    var held = lock.locked;
    var holderCell = cell('holder');
    fill(holderCell, held ? '' : 'free', held ? '' : 'muted');
    if (held) {
      var ha = el('a', 'trunc', holderText(r));
      ha.title = holderText(r);
      ha.href = '/holders/' + encodeURIComponent(r.holder);
      ha.dataset.testid = 'holder-link';
      holderCell.appendChild(ha);
    }
    var lease = cell('lease');
    lease.textContent = '';
    if (held) lease.appendChild(countdown(lock.remainingMs));
    else lease.appendChild(el('span', 'muted', '\u2014'));
    numCell(cell('accepted'), r.accepted);
    numCell(cell('rejected'), r.rejected);
    setBehind(r);
    updateStats();
  }

  // The totals the server rendered count every resource the viewer sees;
  // the rows add up to them only when the table holds all of those (first
  // page in id order, no search, no next page). Then every count on the
  // page follows the rows, the cards and the table's own count alike;
  // otherwise none does, and they all stay as the server drew them.
  function tableComplete() {
    var t = document.querySelector('table[data-testid="resources"]');
    return t !== null && t.dataset.liveAdd === 'true' && !t.dataset.prefix;
  }

  function updateStats() {
    if (!tableComplete()) return;
    var rows = document.querySelectorAll('tr[data-testid="resource-row"]');
    var held = 0, acc = 0, rej = 0;
    rows.forEach(function (tr) {
      if (tr.querySelector('td[data-col="lease"] .countdown:not(.gone)')) held++;
      acc += ungroup(tr.querySelector('td[data-col="accepted"]').textContent);
      rej += ungroup(tr.querySelector('td[data-col="rejected"]').textContent);
    });
    var set = function (id, n, one, many) {
      var s = document.querySelector('[data-testid="' + id + '"]');
      if (!s) return;
      s.textContent = group(n);
      s.parentNode.querySelector('.stat-l').textContent = String(n) === '1' ? one : many;
    };
    set('stat-resources', rows.length, 'resource', 'resources');
    set('stat-held', held, 'lock held', 'locks held');
    set('stat-accepted', acc, 'write accepted', 'writes accepted');
    set('stat-rejected', rej, 'write refused', 'writes refused');
    var count = document.querySelector('[data-testid="table-count"]');
    if (count) {
      count.textContent = plural(rows.length, 'resource', 'resources') + ' \u00b7 ' +
        plural(held, 'lock', 'locks') + ' held of ' + group(rows.length);
    }
  }

  // refresh re-reads a resource after its events, at most once per burst of
  // events: the stream says what happened, the API says where things stand.
  var pending = new Map();

  function refresh(id, apply) {
    if (pending.has(id)) return;
    pending.set(id, setTimeout(function () {
      pending.delete(id);
      var enc = encodeURIComponent(id);
      Promise.all([
        fetch('/v1/resources/' + enc, { cache: 'no-store' }).then(json),
        fetch('/v1/locks/' + enc, { cache: 'no-store' }).then(json)
      ]).then(function (v) { apply(v[0], v[1]); })
        .catch(function () { /* the next event or reconnect refreshes again */ });
    }, 120));
  }

  function json(res) {
    if (!res.ok) throw new Error('HTTP ' + res.status);
    return res.text().then(parseJSON);
  }

  function onOverviewEvent(e) {
    var feed = document.querySelector('ol[data-testid="feed"]');
    if (feed) {
      feed.insertBefore(feedItem(e), feed.firstChild);
      while (feed.children.length > FEED_MAX) feed.lastChild.remove();
      var empty = document.querySelector('.feed-empty');
      if (empty) empty.remove();
    }
    var refusals = document.querySelector('ul[data-testid="refusals"]');
    if (refusals && e.type === 'reject') {
      refusals.insertBefore(refusalItem(e), refusals.firstChild);
      while (refusals.children.length > REFUSALS_MAX) refusals.lastChild.remove();
      var none = document.querySelector('.refusals-empty');
      if (none) none.remove();
    }
    refresh(e.resourceId, updateRow);
  }

  function refusalItem(e) {
    var li = el('li', 'refusal is-new');
    li.dataset.testid = 'refusal';
    li.dataset.seq = String(e.seq);
    li.appendChild(badge(e));
    var a = el('a', 'res trunc', e.resourceId);
    a.href = resourceURL(e.resourceId);
    a.title = e.resourceId;
    li.appendChild(a);
    li.appendChild(detailEl('span', e, 'token ' + group(e.presented) + ' < ' + group(e.required) + from(e.source)));
    li.appendChild(timeEl(e.at, 'time'));
    return li;
  }

  // ---- resource page ---------------------------------------------------

  function historyRow(e) {
    var tr = el('tr', 'is-new');
    tr.dataset.testid = 'history-row';
    tr.dataset.seq = String(e.seq);
    tr.dataset.type = e.type;
    var td = el('td');
    td.appendChild(timeEl(e.at, 'datetime'));
    tr.appendChild(td);
    td = el('td');
    td.appendChild(badge(e));
    tr.appendChild(td);
    tr.appendChild(detailEl('td', e, detail(e)));
    return tr;
  }

  function updateLockCard(r, lock) {
    var f = function (name) { return document.querySelector('[data-testid="lock-state"] [data-field="' + name + '"]'); };
    var state = f('state');
    state.textContent = '';
    state.appendChild(el('span', lock.locked ? 'tag held' : 'tag', lock.locked ? 'locked' : 'free'));
    // A shared lock's mode, readers and phase token are the server's to
    // draw (the "holds" part, reloaded on every grant, release and expiry).
    var holder = f('holder');
    if (holder && !lock.shared) {
      holder.textContent = lock.locked
        ? (lock.holdCount > 1 ? lock.holder + ' (held ' + group(lock.holdCount) + ' times)' : lock.holder) : 'nobody';
      f('token').textContent = lock.locked ? group(lock.token) : '\u2014';
    }
    var lease = f('lease');
    lease.textContent = '';
    if (lock.locked) lease.appendChild(countdown(lock.remainingMs)); else lease.textContent = '\u2014';
    f('waiters').textContent = group(lock.waiters || 0);
    f('hwm').textContent = group(r.highWaterMark);
    var last = f('last');
    last.textContent = group(r.lastToken);
    var alarm = f('alarm');
    var alarmLabel = document.querySelector('[data-testid="lock-state"] [data-field-label="alarm"]');
    if (isBehind(r)) {
      last.appendChild(document.createTextNode(' '));
      last.appendChild(el('span', 'tag danger', 'behind'));
    }
    if (alarm) {
      alarm.textContent = isBehind(r) ? alarmText(r) : '';
      alarm.hidden = alarmLabel.hidden = !isBehind(r);
    }
    f('accepted').textContent = group(r.accepted);
    var rej = f('rejected');
    rej.textContent = group(r.rejected) + ' ';
    if (r.rejected > 0) {
      var a = el('a', '', 'see them');
      a.href = '/rejections?resource=' + encodeURIComponent(r.resourceId);
      rej.appendChild(a);
    }
    setBehind(r);
  }

  // The chart is drawn by the server; say when it is behind the history.
  var chartBehind = 0;

  function onResourceEvent(e) {
    var tbody = document.querySelector('table[data-testid="history"] tbody');
    if (tbody) {
      tbody.insertBefore(historyRow(e), tbody.firstChild);
      tbody.closest('table').hidden = false;
      var none = document.querySelector('[data-testid="no-history"]');
      if (none) none.remove();
    }
    var note = document.querySelector('[data-testid="chart-note"]');
    if (note && (e.type === 'grant' || e.type === 'accept' || e.type === 'reject')) {
      chartBehind++;
      note.querySelector('.chart-note-text').textContent = chartBehind === 1
        ? '1 new grant or write since this chart was drawn.'
        : group(chartBehind) + ' new grants or writes since this chart was drawn.';
      note.hidden = false;
    }
    refresh(e.resourceId, updateLockCard);
    // A lease's end may start a lock-delay, and every grant and release
    // moves the waits and holds: the server draws both (reloadParts), its
    // clock counting the delay.
    if (e.type === 'grant' || e.type === 'release' || e.type === 'expire') reloadParts();
  }

  // ---- the stream --------------------------------------------------------

  var attempt = 0;
  var liveText = document.querySelector('.live-text');

  function setLive(state, text) {
    body.dataset.live = state;
    if (liveText) liveText.textContent = text;
  }

  function onEvent(e) {
    if (e.type === 'reject' && e.reason === 'stale-token') {
      stale.push(performance.now());
      checkBurst();
    }
    if (page === 'overview') onOverviewEvent(e);
    else if (page === 'resource') onResourceEvent(e);
    else if (page === 'election') reloadParts();
    else if (page === 'semaphore' && isSlotOf(e.resourceId, body.dataset.semaphore)) reloadParts();
  }

  // ---- server-drawn parts -------------------------------------------------
  // A semaphore's and an election's cards, a resource's lock-delay and
  // waits and holds are drawn by the server; an event that touches them
  // fetches the page again and swaps its live parts in (parsed, never run: the
  // server escaped every id and value, and the policy forbids inline script).

  function isSlotOf(id, name) {
    if (typeof id !== 'string' || !name || id.lastIndexOf(name + '#', 0) !== 0) return false;
    return /^(0|[1-9][0-9]{0,3})$/.test(id.slice(name.length + 1));
  }

  var reloading = null;

  function reloadParts() {
    if (reloading) return;
    reloading = setTimeout(function () {
      fetch(location.href, { cache: 'no-store' }).then(function (res) {
        if (!res.ok) throw new Error('HTTP ' + res.status);
        return res.text();
      }).then(function (html) {
        reloading = null;
        var doc = new DOMParser().parseFromString(html, 'text/html');
        document.querySelectorAll('[data-live-part]').forEach(function (part) {
          var fresh = doc.querySelector('[data-live-part="' + part.dataset.livePart + '"]');
          if (!fresh) return;
          fresh = document.adoptNode(fresh);
          part.replaceWith(fresh);
          localizeAll(fresh);
          fresh.querySelectorAll('.countdown[data-remaining-ms]').forEach(function (s) {
            startCountdown(s, Number(s.dataset.remainingMs));
          });
        });
      }).catch(function () { reloading = null; /* the next event tries again */ });
    }, 120);
  }

  function connect() {
    var q = new URLSearchParams();
    if (filter) q.set('resource', filter);
    q.set('since', String(lastSeq));
    var proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    var ws = new WebSocket(proto + '//' + location.host + '/v1/events?' + q.toString());
    ws.onopen = function () {
      attempt = 0;
      setLive('open', 'live');
      if (connBanner) connBanner.hidden = true;
    };
    ws.onmessage = function (m) {
      var e;
      try { e = parseJSON(m.data); } catch (err) { return; }
      if (!e || typeof e.seq !== 'number' || e.seq <= lastSeq) return; // a replayed duplicate
      lastSeq = e.seq;
      onEvent(e);
    };
    ws.onclose = function () {
      // Exponential backoff with jitter, capped, so a restarting server is
      // not hammered by every open dashboard at once.
      var delay = Math.min(15000, 500 * Math.pow(2, attempt)) * (0.75 + Math.random() * 0.5);
      attempt++;
      setLive('reconnecting', 'reconnecting…');
      if (connBanner) {
        connBanner.querySelector('.conn-text').textContent =
          'Reconnecting in ' + Math.max(1, Math.round(delay / 1000)) + ' s (attempt ' + attempt + ').';
        connBanner.hidden = false;
      }
      setTimeout(connect, delay);
    };
  }

  // ---- admin actions -------------------------------------------------------

  // Each action asks in a dialog first, then calls the API with the page's
  // session cookie; the stream then shows the event it recorded.
  function adminActions() {
    var card = document.querySelector('[data-testid="admin-actions"]');
    if (!card) return;
    var id = card.dataset.resource;
    var dialog = card.querySelector('dialog');
    var result = card.querySelector('.admin-result');
    // confirmThen asks first, naming the resource and what the action
    // does; only "ok" runs it (Escape and Cancel change nothing).
    function confirmThen(title, effect, ok, run) {
      dialog.querySelector('.confirm-title').textContent = title;
      dialog.querySelector('.confirm-effect').textContent = effect;
      dialog.querySelector('[data-testid="confirm-ok"]').textContent = ok;
      dialog.returnValue = '';
      dialog.onclose = function () { if (dialog.returnValue === 'ok') run(); };
      dialog.showModal();
    }
    // call posts body, JSON text (JSON.stringify would round a floor
    // above 2^53), and reads the answer with exact tokens.
    function call(action, body, done) {
      fetch('/v1/locks/' + encodeURIComponent(id) + '/' + action, {
        method: 'POST', credentials: 'same-origin',
        headers: { 'Content-Type': 'application/json' },
        body: body || undefined
      }).then(function (res) {
        return res.text().then(parseJSON).then(function (j) {
          result.textContent = res.ok ? done(j) : 'Refused (' + res.status + '): ' + (j.error || '');
          result.dataset.ok = String(res.ok);
        });
      }).catch(function (err) { result.textContent = 'Failed: ' + err; result.dataset.ok = 'false'; });
    }
    function field(name) {
      var f = document.querySelector('[data-testid="lock-state"] [data-field="' + name + '"]');
      return f ? f.textContent.trim() : '';
    }
    card.querySelector('[data-action="expire"]').addEventListener('click', function () {
      var holder = field('holder'), token = field('token');
      var effect = holder && holder !== 'nobody'
        ? holder + ' loses the lock now and the next waiter, if any, gets it. Token ' + token +
          ' stays valid at guards until a newer token is used, so a paused holder can still write until then.'
        : 'Nobody holds it now: this records an expiry and changes nothing else.';
      confirmThen('Force-expire the lock on \u201c' + id + '\u201d?', effect, 'Force-expire ' + id, function () {
        call('expire', null, function () { return 'Expired: the lock on ' + id + ' is free.'; });
      });
    });
    var form = card.querySelector('form[data-action="reset"]');
    form.addEventListener('submit', function (ev) {
      ev.preventDefault();
      // The floor as typed, every digit kept ("1e3" and such as numbers).
      var typed = form.elements.floor.value.trim();
      var floor = /^\d+$/.test(typed) ? String(BigInt(typed)) : String(Number(typed));
      confirmThen('Reset the token counter of \u201c' + id + '\u201d to at least ' + group(floor) + '?',
        'The next grant on ' + id + ' takes a token above ' + group(floor) + ' and the counter alarm is cleared. ' +
        'Only do this once no token above ' + group(floor) + ' is in use anywhere: a guard holding a higher mark refuses every new token below it.',
        'Reset ' + id, function () {
          call('reset', '{"floor":' + floor + '}', function (j) { return 'Reset: the next grant takes token ' + group(j.nextToken) + '.'; });
        });
    });
  }

  // ---- rejection filter ---------------------------------------------------

  // The filter's times in the zone of the rows: the server writes the
  // form's datetime-local values in UTC (and labels them so, for a browser
  // without the script); this shows them, and takes what is typed, in the
  // viewer's zone, and sends them as UTC instants.
  function localInput(d) {
    var s = d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + 'T' +
      pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
    return d.getMilliseconds() ? s + '.' + pad(d.getMilliseconds(), 3) : s;
  }

  function filterInViewersZone() {
    var form = document.querySelector('form[data-testid="filters"]');
    if (!form) return;
    var zone = '';
    try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone || ''; } catch (err) { zone = ''; }
    ['since', 'until'].forEach(function (name) {
      var input = form.elements[name];
      if (input.value) {
        var d = new Date(input.value + 'Z');
        if (!isNaN(d.getTime())) input.value = localInput(d);
      }
      var label = form.querySelector('[data-testid="zone-' + name + '"]');
      if (label) label.textContent = '(' + (zone || 'local time') + ')';
    });
    form.addEventListener('submit', function (ev) {
      ev.preventDefault();
      var q = new URLSearchParams();
      new FormData(form).forEach(function (v, k) {
        if (v === '') return;
        if (k === 'since' || k === 'until') {
          var d = new Date(v); // a datetime-local value: the viewer's zone
          if (!isNaN(d.getTime())) v = d.toISOString();
        }
        q.append(k, v);
      });
      var qs = q.toString();
      location.assign(form.getAttribute('action') + (qs ? '?' + qs : ''));
    });
  }

  // ---- start -------------------------------------------------------------

  localizeAll(document);
  document.querySelectorAll('.countdown[data-remaining-ms]').forEach(function (s) {
    startCountdown(s, Number(s.dataset.remainingMs));
  });
  setInterval(function () { tick(); checkBurst(); }, 500);
  // Relative times age: refresh them every 15 s.
  setInterval(function () { localizeAll(document); }, 15000);
  adminActions();
  if (page === 'rejections') filterInViewersZone();
  if (page === 'overview' || page === 'resource' || page === 'election' || page === 'semaphore') connect();
})();
