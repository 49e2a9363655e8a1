// The navigator page: ask a question, watch the pipeline stages finish, read the answer
// claim by claim and open each cited paragraph.
//
// Every piece of text that comes from the API or the corpus reaches the page through
// textContent or a text node (see el()): never through innerHTML.
'use strict';

(() => {
  // The pipeline's stages in order (services/pipeline.py STAGES, names as in the trace). A
  // stage the page does not know is still shown, labelled from its name.
  const STAGES = [
    ['retrieval', 'Search the manual (keywords and meaning)'],
    ['expansion', 'Follow cross-references'],
    ['rollup', 'Gather whole pages'],
    ['selection', 'Choose the pages that answer'],
    ['stitching', 'Write the answer from the pages'],
    ['verification', 'Check each sentence against its source'],
  ];

  const VERDICTS = {
    supported: { icon: '✓', label: 'Supported' },
    partially_supported: { icon: '◐', label: 'Partly supported' },
    unsupported: { icon: '?', label: 'Not supported' },
    contradicted: { icon: '✗', label: 'Contradicted' },
  };

  const REFUSALS = {
    out_of_scope: {
      icon: '⊘',
      title: 'Outside what this navigator covers',
      lead: 'This navigator answers questions about employment income (pay, benefits in kind, ' +
        'expenses, PAYE) from HMRC\'s Employment Income Manual. This question is about something ' +
        'else, so it has not guessed. Where another HMRC manual covers it, its pages are listed below.',
    },
    low_coverage: {
      icon: '∅',
      title: 'The manual does not cover this well enough',
      lead: 'No paragraph in the manual answers this question closely enough to cite, so there is ' +
        'no answer. Naming the benefit, expense or payment more precisely may help.',
    },
    conflict: {
      icon: '⇄',
      title: 'The manual gives different answers',
      lead: 'Pages of the manual give different figures for this in different cases, and the question ' +
        'does not say which case is yours. Choose one to ask again with it, or compare the pages side by side.',
    },
    stale: {
      icon: '◷',
      title: 'The manual may be out of date for this',
      lead: 'The question asks for a later period (or today\'s figure) than the pages that answer it ' +
        'give, so the manual\'s figures may no longer apply. The latest figures it has are below.',
    },
    malformed: {
      icon: '✎',
      title: 'That could not be read as a question',
      lead: 'Please write the question in words, for example: "Are eye tests paid for by my ' +
        'employer taxable?"',
    },
  };

  const OLD_AFTER_YEARS = 2;
  const POLL_INTERVAL_MS = 500;
  const POLL_DEADLINE_MS = 120000;

  // ---- small DOM helpers (text only) ----------------------------------------------------

  /** Build an element; string children become text nodes, so data is never parsed as HTML. */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === 'class') node.className = value;
      else node.setAttribute(key, value === true ? '' : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  const $ = (id) => document.getElementById(id);
  const api = (path) => new URL(path, document.baseURI).toString();

  function announce(message) {
    const region = $('announcer');
    region.textContent = '';
    // A fresh text node a tick later makes screen readers announce repeated messages too.
    window.setTimeout(() => { region.textContent = message; }, 50);
  }

  function humanise(key) {
    const words = String(key).replace(/[_-]+/g, ' ').trim();
    return words.charAt(0).toUpperCase() + words.slice(1);
  }

  function parseDate(value) {
    if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}/.test(value)) return null;
    const date = new Date(value);
    return Number.isNaN(date.getTime()) ? null : date;
  }

  function formatDate(date) {
    return date.toLocaleDateString('en-GB', { day: 'numeric', month: 'long', year: 'numeric', timeZone: 'UTC' });
  }

  function yearsSince(date) {
    return (Date.now() - date.getTime()) / (365.25 * 24 * 3600 * 1000);
  }

  /** Only plain web links are rendered as links (no javascript: or data: URLs from data). */
  function safeHref(url) {
    try {
      const parsed = new URL(String(url));
      return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? parsed.toString() : null;
    } catch (_) {
      return null;
    }
  }

  /** A readable message from an error body: the gateway's {"error": {"type", "message"}}, an SSE
   *  error event's {"type", "message"}, or FastAPI's plain {"detail": ...}. */
  function errorMessage(body, status) {
    if (body && typeof body === 'object') {
      if (body.error && typeof body.error === 'object' && typeof body.error.message === 'string') return body.error.message;
      const detail = body.message ?? body.detail ?? body.error;
      if (typeof detail === 'string' && detail) return detail;
      if (Array.isArray(detail) && detail.length) {
        return detail.map((d) => {
          if (typeof d === 'string') return d;
          const where = Array.isArray(d.loc) ? d.loc.filter((p) => p !== 'body').join('.') : '';
          return where ? `${where}: ${d.msg}` : String(d.msg ?? JSON.stringify(d));
        }).join('; ');
      }
      if (detail && typeof detail === 'object' && typeof detail.message === 'string') return detail.message;
    }
    if (typeof body === 'string' && body.trim()) return body.trim().slice(0, 300);
    return `The server answered with status ${status}.`;
  }

  // ---- claim highlighting ---------------------------------------------------------------

  const STOPWORDS = new Set((
    'the a an and or but of to in on for by with at from as is are was were be been being this that ' +
    'these those it its if then than so such not no can may must will would should could do does did ' +
    'has have had you your my me i we our they their them he she his her who which what when where how ' +
    'any all some each other more most only also into out up about over under there here per'
  ).split(' '));
  const WORD_RE = /[\p{L}\p{N}£$%][\p{L}\p{N}£$%,.'’-]*[\p{L}\p{N}%]|[\p{L}\p{N}£$%]/gu;

  function normWord(word) {
    let w = word.toLowerCase().replace(/[’']/g, "'").replace(/[.,]+$/, '');
    if (/^[\p{L}']+$/u.test(w) && w.length > 4 && w.endsWith('s')) w = w.slice(0, -1);
    return w;
  }

  function isSignificant(word) {
    return /\p{N}/u.test(word) || (word.length >= 3 && !STOPWORDS.has(word));
  }

  function escapeRegExp(text) {
    return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }

  /** The claim's words that count when matching it to its source: figures and content words. */
  function claimTerms(claim) {
    return new Set((claim.match(WORD_RE) || []).map(normWord).filter(isSignificant));
  }

  /** Append `text` to `container`, marking the claim: the whole claim when the paragraph
   *  contains it verbatim (the offline stitcher quotes), else each of the claim's words. */
  function appendHighlighted(container, text, claim) {
    const claimWords = (claim.match(WORD_RE) || []);
    if (claimWords.length >= 3) {
      const pattern = new RegExp(claimWords.map(escapeRegExp).join('[^\\p{L}\\p{N}]+'), 'iu');
      const found = pattern.exec(text);
      if (found) {
        container.append(text.slice(0, found.index),
          el('mark', { class: 'mark-span' }, found[0]),
          text.slice(found.index + found[0].length));
        return;
      }
    }
    const terms = claimTerms(claim);
    let last = 0;
    for (const match of text.matchAll(WORD_RE)) {
      if (!terms.has(normWord(match[0]))) continue;
      container.append(text.slice(last, match.index), el('mark', {}, match[0]));
      last = match.index + match[0].length;
    }
    container.append(text.slice(last));
  }

  /** A table paragraph (a row a line, cells joined by " | "; its first `headerRows` rows name
   *  the columns) as a table, marking the rows the claim quotes: those whose every figure and
   *  content word is in the claim (a claim renders one or two rows with their column names,
   *  so marking its words would mark most of the table). The separators stay in the text,
   *  hidden, so the panel's text is still the paragraph's own. */
  function appendTable(container, text, headerRows, claim) {
    const terms = claimTerms(claim);
    const quotes = (cells) => {
      const words = cells.flatMap((c) => (c.match(WORD_RE) || []).map(normWord).filter(isSignificant));
      return words.length > 0 && words.every((w) => terms.has(w));
    };
    const head = el('thead');
    const body = el('tbody');
    text.split('\n').forEach((line, i, lines) => {
      const end = i < lines.length - 1 ? '\n' : '';
      if (!line.trim()) {
        if (end) body.append(el('tr', { class: 'blank-row', hidden: '' }, el('td', {}, line + end)));
        return;
      }
      const cells = line.split('|');
      const header = i < headerRows;
      const quoted = !header && quotes(cells);
      const row = el('tr', quoted ? { class: 'is-quoted' } : {}, ...cells.map((cell, j) => {
        const sep = j < cells.length - 1 ? '|' : end;
        return el(header ? 'th' : 'td', header ? { scope: 'col' } : {},
          quoted && cell.trim() ? el('mark', {}, cell) : cell,
          sep ? el('span', { class: 'cell-sep', hidden: '' }, sep) : null);
      }));
      (header ? head : body).append(row);
    });
    container.append(el('div', { class: 'table-wrap' },
      el('table', { class: 'source-table' }, head.childElementCount ? head : null, body)));
  }

  // ---- the source panel -----------------------------------------------------------------

  const panel = {
    trigger: null,

    open(citation, paragraphId, number, claim, trigger) {
      const aside = $('source-panel');
      if (this.trigger && this.trigger !== trigger) this.trigger.setAttribute('aria-expanded', 'false');
      this.trigger = trigger;
      if (trigger) trigger.setAttribute('aria-expanded', 'true');

      $('source-number').textContent = number ? `[${number}]` : '';
      const path = $('source-path');
      const text = $('source-text');
      const updated = $('source-updated');
      const link = $('source-link');
      path.replaceChildren();
      text.replaceChildren();
      updated.replaceChildren();
      updated.className = 'source-updated';

      if (!citation) {
        $('source-title').textContent = paragraphId;
        text.append(el('span', { class: 'missing' }, 'The server did not return this paragraph.'));
        link.hidden = true;
      } else {
        for (const part of citation.heading_path || []) path.append(el('li', {}, part));
        $('source-title').textContent = `${citation.section_id}: ${citation.title}`;
        const table = citation.kind === 'table';
        $('source-claim-label').replaceChildren(table ? 'Rows the sentence quotes are ' : 'Words from the sentence are ',
          el('mark', {}, 'highlighted'), ':');
        if (table) appendTable(text, citation.text || '', citation.header_rows || 0, claim || '');
        else appendHighlighted(text, citation.text || '', claim || '');

        const date = parseDate(citation.public_updated_at);
        if (date) {
          const years = yearsSince(date);
          if (years > OLD_AFTER_YEARS) {
            updated.classList.add('is-old');
            updated.append(
              el('span', { class: 'old-flag' }, el('span', { 'aria-hidden': 'true' }, '⚠ '), 'Old page: '),
              `last updated ${formatDate(date)}, over ${Math.floor(years)} years ago. `,
              'Rules and rates may have changed since; check the live page.');
          } else {
            updated.append(`Last updated ${formatDate(date)}.`);
          }
        } else {
          updated.append('Last-updated date not known.');
        }

        const href = safeHref(citation.url);
        link.hidden = !href;
        if (href) {
          link.href = href;
          link.textContent = `Read ${citation.section_id} on GOV.UK`;
          link.append(el('span', { class: 'visually-hidden' }, ' (opens in a new tab)'));
        }
      }
      aside.hidden = false;
      aside.focus();
      announce(`Source ${number ? `${number} ` : ''}open: ${citation ? citation.title : paragraphId}.`);
    },

    close() {
      $('source-panel').hidden = true;
      if (this.trigger) {
        this.trigger.setAttribute('aria-expanded', 'false');
        if (document.body.contains(this.trigger)) this.trigger.focus();
      }
      this.trigger = null;
    },
  };

  // ---- one question and its answer (a "turn") -------------------------------------------

  const QUESTION_ECHO_CHARS = 280;

  /** The question as echoed above its answer: long pastes are cut (the box keeps them whole). */
  function shortened(question) {
    if (question.length <= QUESTION_ECHO_CHARS) return [question];
    return [`${question.slice(0, QUESTION_ECHO_CHARS)}…`,
      el('span', { class: 'question-length' }, ` (${question.length.toLocaleString('en-GB')} characters in all)`)];
  }

  class Turn {
    constructor(question) {
      this.stageItems = new Map();
      this.stageList = el('ol', { class: 'stages' });
      this.progressSummary = el('summary', {}, 'Working on it…');
      this.progress = el('details', { class: 'progress', open: true }, this.progressSummary, this.stageList);
      this.result = el('div', { class: 'result' });
      this.heading = el('h2', { class: 'turn-question', tabindex: '-1' }, el('span', { class: 'visually-hidden' }, 'Question: '), ...shortened(question));
      this.node = el('li', { class: 'turn', 'aria-busy': 'true' },
        this.heading,
        this.progress,
        this.result);
      this.addStage('received', 'Question received');
      for (const [name, label] of STAGES) this.addStage(name, label);
      this.stageList.append(...this.stageItems.values());
    }

    addStage(name, label) {
      const item = el('li', { class: 'stage is-waiting' },
        el('span', { class: 'stage-icon', 'aria-hidden': 'true' }, '○'),
        el('span', { class: 'stage-label' }, label),
        el('span', { class: 'stage-meta' }, 'waiting'));
      this.stageItems.set(name, item);
      return item;
    }

    stageDone(trace, quiet = false) {
      const name = String(trace.stage || '');
      let item = this.stageItems.get(name);
      if (!item) {
        // A stage this page does not list: show it after the last finished one.
        item = this.addStage(name, humanise(name));
        const finished = [...this.stageList.querySelectorAll('.is-done')];
        const after = finished.length ? finished[finished.length - 1] : null;
        if (after) after.after(item); else this.stageList.prepend(item);
      }
      if (item.classList.contains('is-done')) return;
      item.className = 'stage is-done';
      item.querySelector('.stage-icon').textContent = '●';
      const parts = [];
      if (typeof trace.ms === 'number') parts.push(`${trace.ms < 10 ? trace.ms.toFixed(1) : Math.round(trace.ms)} ms`);
      const count = Array.isArray(trace.candidate_ids) ? trace.candidate_ids.length : trace.candidates;
      if (typeof count === 'number' && count > 0) parts.push(`${count} candidate${count === 1 ? '' : 's'}`);
      item.querySelector('.stage-meta').textContent = parts.length ? `done · ${parts.join(' · ')}` : 'done';
      if (!quiet && name !== 'received') announce(`Done: ${item.querySelector('.stage-label').textContent}.`);
    }

    finishProgress(result) {
      for (const trace of result.trace || []) this.stageDone(trace, true);
      let ran = 0;
      let total = 0;
      for (const item of this.stageList.children) {
        if (item.classList.contains('is-done')) {
          ran += 1;
          continue;
        }
        item.className = 'stage is-skipped';
        item.querySelector('.stage-icon').textContent = '–';
        item.querySelector('.stage-meta').textContent = 'not needed';
      }
      for (const trace of result.trace || []) total += typeof trace.ms === 'number' ? trace.ms : 0;
      const steps = Math.max(0, ran - 1); // "Question received" is not a pipeline stage
      this.progressSummary.textContent = steps === 0
        ? 'How this was worked out: refused before searching the manual'
        : `How this was worked out: ${steps} stage${steps === 1 ? '' : 's'}${total ? `, ${Math.round(total)} ms` : ''}`;
      this.progress.open = false;
    }

    stop(message) {
      this.node.setAttribute('aria-busy', 'false');
      this.progressSummary.textContent = 'Stopped';
      this.progress.open = false;
      this.result.replaceChildren(el('p', { class: 'notice' }, message));
    }

    showError(title, message) {
      this.node.setAttribute('aria-busy', 'false');
      this.progressSummary.textContent = 'Not answered';
      this.progress.open = false;
      this.result.replaceChildren(el('div', { class: 'card card-error', role: 'alert' },
        el('h3', {}, el('span', { class: 'card-icon', 'aria-hidden': 'true' }, '!'), title),
        el('p', { class: 'error-message' }, message)));
      announce(`${title}: ${message}`);
    }

    showResult(result) {
      const byParagraph = new Map((result.citations || []).map((c) => [c.paragraph_id, c]));
      if (result.status === 'answered' && result.answer) {
        this.result.replaceChildren(renderAnswer(result.answer, byParagraph, result.question));
        const routes = renderRoutes(result.routes);
        if (routes) this.result.append(el('section', { class: 'card route-card' }, routes));
        const sentences = result.answer.sentences || [];
        const supported = sentences.filter((s) => s.verdict === 'supported').length;
        announce(`Answer ready: ${sentences.length} sentence${sentences.length === 1 ? '' : 's'}, ` +
          `${supported} fully supported by their sources.`);
      } else if (result.refusal) {
        this.result.replaceChildren(renderRefusal(result.refusal, byParagraph));
        const kind = REFUSALS[result.refusal.category];
        announce(`No answer. ${kind ? kind.title : humanise(result.refusal.category)}. ${result.refusal.message || ''}`);
      } else {
        this.showError('Unexpected reply', 'The server returned a result with neither an answer nor a refusal.');
        return;
      }
      // After the result: stages the stream did not report are filled in from the trace.
      this.finishProgress(result);
      this.node.setAttribute('aria-busy', 'false');
    }
  }

  // ---- rendering an answer ---------------------------------------------------------------

  function verdictBadge(verdict) {
    const v = VERDICTS[verdict] || { icon: '?', label: humanise(verdict || 'unchecked') };
    return el('span', { class: `verdict-badge verdict-${verdict}` },
      el('span', { class: 'verdict-icon', 'aria-hidden': 'true' }, v.icon), ' ', v.label);
  }

  /** "EIM31355: page title › sub-heading": the sub-heading tells two paragraphs of one page apart. */
  function citationLabel(citation) {
    const path = citation.heading_path || [];
    const last = path.length ? path[path.length - 1] : '';
    const label = `${citation.section_id}: ${citation.title}`;
    return last && last !== citation.title ? `${label} › ${last}` : label;
  }

  /** Claim-by-claim sentences with footnote buttons; `numbers` maps paragraph id to its
   *  footnote number (first use first) and is filled in as markers are made. */
  function renderSentences(sentences, byParagraph, numbers) {
    const numberOf = (pid) => {
      if (!numbers.has(pid)) numbers.set(pid, numbers.size + 1);
      return numbers.get(pid);
    };
    const list = el('ol', { class: 'sentences' });
    for (const sentence of sentences) {
      const verdict = sentence.verdict;
      const text = el('p', { class: 'sentence-text' }, sentence.text);
      for (const pid of sentence.citations || []) {
        const n = numberOf(pid);
        const citation = byParagraph.get(pid);
        const label = `Source ${n}: ${citation ? citationLabel(citation) : pid}`;
        const button = el('button', {
          type: 'button', class: 'fn', 'aria-label': label, 'aria-controls': 'source-panel',
          'aria-expanded': 'false', 'data-paragraph': pid,
        }, String(n));
        button.addEventListener('click', () => {
          if (panel.trigger === button && !$('source-panel').hidden) panel.close();
          else panel.open(citation, pid, n, sentence.text, button);
        });
        text.append(' ', button);
      }
      const check = el('p', { class: 'sentence-check' }, verdictBadge(verdict));
      if (sentence.relevance) check.append(' ', relevanceBadge(sentence));
      if (sentence.reason) check.append(' ', el('span', { class: 'reason' }, readableReason(sentence.reason, numbers)));
      list.append(el('li', { class: `sentence verdict-${verdict}` }, text, check));
    }
    return list;
  }

  /** How sure the answer is that a claim's page answers the question (the page ranker's
   *  probability against its threshold): beside the verdict, which says the words are the source's. */
  function relevanceBadge(sentence) {
    const answering = sentence.relevance === 'answering';
    const sure = typeof sentence.confidence === 'number' ? ` (${Math.round(sentence.confidence * 100)}% likely its page answers)` : '';
    return el('span', { class: `relevance-badge relevance-${sentence.relevance}`, title: `How sure the answer is${sure}` },
      answering ? 'Answers your question' : 'Related background');
  }

  /** Pages nearly as likely to answer but about another subject: one tap asks again about that page. */
  function renderAlternatives(alternatives, question, unsure) {
    if (!alternatives || !alternatives.length || !question) return null;
    const buttons = alternatives.map((alt) => {
      const button = el('button', { type: 'button', class: 'alternative', 'data-focus': alt.section_id },
        el('span', { class: 'alternative-title' }, alt.title), ' ', el('span', { class: 'alternative-id' }, alt.section_id));
      button.addEventListener('click', () => ask(question, { fresh: false, focus: alt.section_id }));
      return button;
    });
    return el('section', { class: 'alternatives', 'aria-label': 'Other pages the question may mean' },
      el('p', { class: 'alternatives-heading' }, unsure ? 'The answer may be on one of these pages' : 'Or did you mean'), ...buttons);
  }

  /** Said first when the service is not sure the answer answers (answer.may_not_answer): the
   *  reader is told plainly, and pointed at the other likely pages below. */
  function renderUnsure(answer) {
    if (!answer.may_not_answer) return null;
    return el('p', { class: 'answer-unsure', role: 'note' },
      'This may not answer your question: these are the closest passages found, not a confirmed answer.' +
      (answer.alternatives && answer.alternatives.length ? ' Other pages that may answer it are listed below.' : ''));
  }

  /** A verdict's reason as a reader can follow it: the paragraph ids it names become their
   *  footnote numbers, and a verbatim quote (services/stages/verification.py QUOTED) says so. */
  function readableReason(reason, numbers) {
    if (reason === 'quoted') return 'quoted word for word from its source';
    return reason.replace(PARAGRAPH_ID_IN_TEXT_RE, (pid) => (numbers.has(pid) ? `source [${numbers.get(pid)}]` : pid));
  }

  /** The cited pages, each once, with the footnotes that point into it. */
  function renderSourceList(sentences, byParagraph, numbers) {
    const pages = new Map(); // section id (or the bare paragraph id) -> [[pid, n], ...]
    for (const [pid, n] of numbers) {
      const key = byParagraph.has(pid) ? byParagraph.get(pid).section_id : pid;
      if (!pages.has(key)) pages.set(key, []);
      pages.get(key).push([pid, n]);
    }
    const list = el('ul', { class: 'source-list' });
    for (const [key, refs] of pages) {
      const citation = byParagraph.get(refs[0][0]);
      const markers = refs.map(([pid, n]) => {
        const claim = sentences.find((s) => (s.citations || []).includes(pid));
        const button = el('button', {
          type: 'button', class: 'fn', 'aria-controls': 'source-panel', 'aria-expanded': 'false',
          'aria-label': `Source ${n}`,
        }, String(n));
        button.addEventListener('click', () => panel.open(byParagraph.get(pid), pid, n, claim ? claim.text : '', button));
        return button;
      });
      const href = citation ? safeHref(citation.url) : null;
      const name = citation ? `${citation.section_id}: ${citation.title}` : key;
      list.append(el('li', {}, el('span', { class: 'source-markers' }, markers),
        href ? el('a', { href, rel: 'noopener noreferrer', target: '_blank' }, name,
          el('span', { class: 'visually-hidden' }, ' (on GOV.UK, opens in a new tab)')) : el('span', {}, name)));
    }
    return el('div', { class: 'sources' }, el('h4', {}, 'Sources'), list);
  }

  /** How old the answer's figures are: the newest update date of the pages it cites. */
  function renderAsOf(answer) {
    const date = parseDate(answer.as_of);
    if (!date) return null;
    const years = Math.floor(yearsSince(date));
    const old = yearsSince(date) > OLD_AFTER_YEARS;
    return el('p', { class: old ? 'as-of is-old' : 'as-of' },
      old ? el('span', { class: 'old-flag' }, el('span', { 'aria-hidden': 'true' }, '⚠ '), 'Old figures: ') : null,
      el('span', { class: 'as-of-label' }, old ? 'as of ' : 'As of '),
      el('time', { datetime: answer.as_of }, formatDate(date)),
      el('span', { class: 'as-of-note' }, old
        ? `, ${years} years ago (the newest page cited)`
        : ' — when the newest page cited was last updated.'));
  }

  function renderAnswer(answer, byParagraph, question) {
    const sentences = answer.sentences || [];
    const numbers = new Map();
    // The answer first; the manual's further qualifying sentences ("detail") after it,
    // collapsed until opened, numbered on from the answer's footnotes.
    const shown = sentences.filter((s) => s.role !== 'detail');
    const details = sentences.filter((s) => s.role === 'detail');
    const list = renderSentences(shown, byParagraph, numbers);
    const detail = details.length ? el('details', { class: 'answer-detail' },
      el('summary', {}, `More from the manual (${details.length} sentence${details.length === 1 ? '' : 's'})`),
      el('p', { class: 'detail-note' }, 'Further conditions, exceptions and figures from the pages cited, each checked against its source.'),
      renderSentences(details, byParagraph, numbers)) : null;
    // Counted apart: the reader sees the answer's sentences, not the detail's until opened.
    const supported = (part) => part.filter((s) => s.verdict === 'supported').length;
    const share = typeof answer.faithfulness === 'number' ? Math.round(answer.faithfulness * 100) : null;
    const summary = el('p', { class: 'faithfulness' },
      `${supported(shown)} of ${shown.length} sentence${shown.length === 1 ? '' : 's'} fully supported by ` +
      `${shown.length === 1 ? 'its source' : 'their sources'}` +
      (details.length ? `; ${supported(details)} of ${details.length} in the detail below` : '') +
      (share === null ? '.' : ` (faithfulness ${share}%${details.length ? ` over all ${sentences.length}` : ''}).`));
    return el('section', { class: 'answer', 'aria-label': 'Answer' },
      el('div', { class: 'answer-head' }, el('h3', { class: 'answer-heading' }, 'Answer'), renderAsOf(answer)),
      renderUnsure(answer),
      list,
      renderAlternatives(answer.alternatives, question, answer.may_not_answer),
      summary, // after the sentences, so on a phone the answer itself comes first
      detail,
      numbers.size ? renderSourceList(sentences, byParagraph, numbers) : null);
  }

  // ---- rendering a refusal ----------------------------------------------------------------

  const PARAGRAPH_ID_RE = /^[A-Z]+\d+[A-Za-z]?#c\d+\.p\d+$/;
  const PARAGRAPH_ID_IN_TEXT_RE = /\b[A-Z]+\d+[A-Za-z]?#c\d+\.p\d+\b/g;

  // Wording for the evidence keys the stages send (services/stages); others are humanised.
  const EVIDENCE_LABELS = {
    subjects: 'What the question is about',
    length: 'Length (characters)',
    searched: 'Pages searched',
    candidates: 'Pages considered',
    missing: 'Not found in the manual',
    faithfulness: 'Sentences supported',
    floor: 'Needed to answer',
    verdicts: 'Verdicts',
    claims: 'Sentences checked',
    asked_for: 'Period asked about',
    latest_figures: 'The latest figures the manual has',
    year: 'Year',
    text: 'What it says',
    paragraph_id: 'Paragraph',
    latest_update: 'Latest update of any page that could answer',
    pages: 'Pages that could answer',
    paragraph_ids: 'Paragraphs checked',
    differing: 'What differs',
    section_id: 'Section',
    public_updated_at: 'Last updated',
  };
  const SHARE_KEYS = new Set(['faithfulness', 'floor']);
  const label = (key) => EVIDENCE_LABELS[key] || humanise(key);

  function isPlainObject(value) {
    return value !== null && typeof value === 'object' && !Array.isArray(value);
  }

  function looksLikeParagraph(value) {
    return isPlainObject(value) && typeof value.text === 'string' && Boolean(value.paragraph_id || value.section_id);
  }

  const looksLikeSentence = (value) => isPlainObject(value) && typeof value.text === 'string' && typeof value.verdict === 'string';

  function isRecordList(list) {
    return list.every((v) => isPlainObject(v) && !looksLikeParagraph(v) &&
      Object.values(v).every((x) => x === null || typeof x !== 'object'));
  }

  function openParagraphButton(pid, byParagraph) {
    const citation = byParagraph.get(pid);
    const button = el('button', { type: 'button', class: 'linkish', 'aria-controls': 'source-panel', 'aria-expanded': 'false' },
      `${citation.section_id}: ${citation.title}`);
    button.addEventListener('click', () => panel.open(citation, pid, '', '', button));
    return button;
  }

  /** Any evidence value, generically: dates formatted, paragraph ids openable, lists of
   *  records as tables, checked sentences with their verdicts, nesting kept. */
  function renderValue(value, byParagraph, key) {
    if (value === null || value === undefined) return el('span', { class: 'muted' }, 'none');
    if (Array.isArray(value)) {
      if (!value.length) return el('span', { class: 'muted' }, 'none');
      if (value.every(looksLikeSentence)) return renderSentences(value, byParagraph, new Map());
      if (value.every(looksLikeParagraph)) return el('div', { class: 'quoted-list' }, value.map((v) => renderParagraphCard(v, byParagraph)));
      if (isRecordList(value)) return renderTable(value, byParagraph);
      if (value.every((v) => typeof v === 'string' && v.length <= 16 && !byParagraph.has(v))) {
        return el('span', { class: 'inline-list' }, value.join(', ')); // ids and short terms read as a line
      }
      return el('ul', { class: 'evidence-list' }, value.map((v) => el('li', {}, renderValue(v, byParagraph))));
    }
    if (isPlainObject(value)) {
      if (looksLikeParagraph(value)) return renderParagraphCard(value, byParagraph);
      return el('dl', { class: 'evidence' }, Object.entries(value).flatMap(([k, v]) => [
        el('dt', {}, label(k)), el('dd', {}, renderValue(v, byParagraph, k))]));
    }
    if (typeof value === 'string') {
      const date = parseDate(value);
      if (date) return el('time', { datetime: value }, formatDate(date));
      if (PARAGRAPH_ID_RE.test(value) && byParagraph.has(value)) return openParagraphButton(value, byParagraph);
      return el('span', {}, value);
    }
    if (typeof value === 'number' && SHARE_KEYS.has(key) && value >= 0 && value <= 1) {
      return el('span', {}, `${Math.round(value * 100)}%`);
    }
    if (typeof value === 'boolean') return el('span', {}, value ? 'yes' : 'no');
    return el('span', {}, String(value));
  }

  /** Records as a table; a record's url becomes the link on its title (or section). */
  function renderTable(rows, byParagraph) {
    const keys = [...new Set(rows.flatMap((r) => Object.keys(r)))].filter((k) => k !== 'url');
    const linkKey = keys.includes('title') ? 'title' : 'section_id';
    const cell = (row, key) => {
      const href = key === linkKey ? safeHref(row.url) : null;
      if (href && row[key]) {
        return el('a', { href, rel: 'noopener noreferrer', target: '_blank' }, String(row[key]),
          el('span', { class: 'visually-hidden' }, ' (on GOV.UK, opens in a new tab)'));
      }
      return renderValue(row[key], byParagraph, key);
    };
    return el('div', { class: 'table-wrap' }, el('table', { class: 'evidence-table' },
      el('thead', {}, el('tr', {}, keys.map((k) => el('th', { scope: 'col' }, label(k))))),
      el('tbody', {}, rows.map((r) => el('tr', {}, keys.map((k) => el('td', {}, cell(r, k))))))));
  }

  /** A paragraph quoted in evidence: its page, its text, its link and date. */
  function renderParagraphCard(item, byParagraph) {
    const known = item.paragraph_id ? byParagraph.get(item.paragraph_id) : null;
    const p = { ...(known || {}), ...item };
    const date = parseDate(p.public_updated_at);
    const href = safeHref(p.url);
    return el('article', { class: 'quoted' },
      el('h4', {}, [p.section_id, p.title].filter(Boolean).join(': ') || p.paragraph_id),
      Array.isArray(p.heading_path) && p.heading_path.length
        ? el('p', { class: 'quoted-path' }, p.heading_path.join(' › ')) : null,
      el('blockquote', {}, p.text),
      date ? el('p', { class: 'quoted-date' }, `Last updated ${formatDate(date)}`) : null,
      href ? el('p', {}, el('a', { href, rel: 'noopener noreferrer', target: '_blank' },
        `Read ${p.section_id || 'the page'} on GOV.UK`, el('span', { class: 'visually-hidden' }, ' (opens in a new tab)'))) : null);
  }

  /** Conflict evidence: the paragraphs side by side, each with its statement, then what would
   *  decide between them. Consumes the keys it shows from `evidence`. */
  function renderConflict(evidence, byParagraph) {
    let sides = [];
    if (Array.isArray(evidence.paragraphs) && evidence.paragraphs.every(looksLikeParagraph)) sides = evidence.paragraphs;
    else if (Array.isArray(evidence.paragraph_ids)) sides = evidence.paragraph_ids.map((pid) => byParagraph.get(pid)).filter(Boolean);
    const statements = Array.isArray(evidence.statements) ? evidence.statements : [];
    const parts = [];
    if (sides.length) {
      delete evidence.paragraphs;
      delete evidence.paragraph_ids;
      delete evidence.statements;
      parts.push(el('div', { class: 'side-by-side' }, sides.map((side, i) => el('div', { class: 'side' },
        el('p', { class: 'side-label' }, `Page ${i + 1}`),
        typeof statements[i] === 'string' ? el('p', { class: 'side-says' }, el('strong', {}, 'Says: '), statements[i]) : null,
        renderParagraphCard(side, byParagraph)))));
    }
    if (evidence.what_would_decide) {
      parts.push(el('div', { class: 'decider' }, el('h4', {}, 'What would decide it'),
        el('p', { class: 'decider-text' }, renderValue(evidence.what_would_decide, byParagraph))));
      delete evidence.what_would_decide;
    }
    return parts;
  }

  /** Conflict options as choices: each is the conversation's next turn, the question asked
   *  again under its condition. Consumes `options`. */
  function renderOptions(evidence) {
    const options = Array.isArray(evidence.options) ? evidence.options : [];
    delete evidence.options;
    if (!options.length) return [];
    return [el('div', { class: 'conflict-options' },
      el('h4', {}, 'Which case is yours?'),
      el('ul', { class: 'option-list' }, options.map((option) => {
        const button = el('button', { type: 'button', class: 'conflict-option', 'data-condition': option.condition },
          el('span', { class: 'option-condition' }, option.condition),
          el('span', { class: 'option-value' }, option.value));
        // A conversation turn that chooses this option (services/conversation.py).
        button.addEventListener('click', () => ask(option.condition, { fresh: false, condition: option.condition }));
        return el('li', {}, button);
      })))];
  }

  /** Stale evidence: the latest figures the manual has, each with its year and a button
   *  that opens its paragraph. Consumes `latest_figures`. */
  function renderLatestFigures(evidence, byParagraph) {
    const figures = Array.isArray(evidence.latest_figures) ? evidence.latest_figures : [];
    delete evidence.latest_figures;
    if (!figures.length) return [];
    return [el('div', { class: 'latest-figures' },
      el('h4', {}, 'The latest figures the manual has'),
      el('ul', { class: 'figure-list' }, figures.map((figure) => el('li', { class: 'latest-figure', 'data-year': figure.year },
        el('span', { class: 'figure-year' }, figure.year), ' ',
        el('q', {}, figure.text), ' ',
        byParagraph.has(figure.paragraph_id) ? openParagraphButton(figure.paragraph_id, byParagraph) : null))))];
  }

  /** Where (part of) a question belongs: another manual and its best pages, as links. */
  function renderRoutes(routes) {
    if (!Array.isArray(routes) || !routes.length) return null;
    return el('div', { class: 'routes', 'aria-label': 'Other manuals' },
      el('h4', {}, 'Covered by another HMRC manual'),
      routes.map((route) => el('div', { class: 'route', 'data-manual': route.manual },
        el('p', { class: 'route-part' }, el('strong', {}, `${route.manual_title}: `), route.part),
        el('ul', { class: 'route-pages' }, (route.pages || []).map((page) => {
          const href = safeHref(page.url);
          const text = `${page.section_id}: ${page.title}`;
          return el('li', {}, href
            ? el('a', { href, class: 'route-page', rel: 'noopener noreferrer', target: '_blank' }, text,
              el('span', { class: 'visually-hidden' }, ' (on GOV.UK, opens in a new tab)'))
            : el('span', {}, text));
        })))));
  }

  function renderRefusal(refusal, byParagraph) {
    const category = refusal.category;
    const kind = REFUSALS[category] || { icon: '!', title: humanise(category || 'No answer'), lead: '' };
    const evidence = { ...(refusal.evidence || {}) };
    delete evidence.category; // the card says it
    const card = el('section', { class: `card refusal refusal-${category}`, 'aria-label': `No answer: ${kind.title}`, 'data-category': category },
      el('p', { class: 'card-kicker' }, 'No answer'),
      el('h3', {}, el('span', { class: 'card-icon', 'aria-hidden': 'true' }, kind.icon), kind.title),
      kind.lead ? el('p', { class: 'card-lead' }, kind.lead) : null,
      refusal.message ? el('p', { class: 'card-message' }, el('strong', {}, 'Why: '), refusal.message) : null);
    if (category === 'conflict') card.append(...renderOptions(evidence), ...renderConflict(evidence, byParagraph));
    if (category === 'stale') card.append(...renderLatestFigures(evidence, byParagraph));
    if (category === 'out_of_scope' && Array.isArray(evidence.routes)) {
      const routes = renderRoutes(evidence.routes);
      if (routes) card.append(routes);
      delete evidence.routes;
      if (Array.isArray(evidence.subjects) && !evidence.subjects.length) delete evidence.subjects;
    }
    if (Object.keys(evidence).length) {
      card.append(el('div', { class: 'card-evidence' },
        el('h4', {}, category === 'stale' ? 'The dates' : 'Evidence'), renderValue(evidence, byParagraph)));
    }
    return card;
  }

  // ---- talking to the gateway --------------------------------------------------------------

  class HttpError extends Error {}

  async function readJson(response) {
    const text = await response.text();
    try { return JSON.parse(text); } catch (_) { return text; }
  }

  const isResult = (data) => data && typeof data === 'object' && (data.status === 'answered' || data.status === 'refused');

  /** Follow the server-sent events until the result; fall back to polling if the stream drops. */
  function follow(id, turn, run) {
    return new Promise((resolve, reject) => {
      const source = new EventSource(api(`v1/questions/${encodeURIComponent(id)}/events`));
      run.source = source;
      let settled = false;
      const settle = (fn, value) => {
        if (settled) return;
        settled = true;
        source.close();
        fn(value);
      };
      const onMessage = (event) => {
        let data;
        try { data = JSON.parse(event.data); } catch (_) { return; }
        const result = isResult(data) ? data : (isResult(data && data.result) ? data.result : null);
        if (result) settle(resolve, result);
        else if (event.type === 'error') settle(reject, new HttpError(errorMessage(data, 'error')));
        else if (data && data.stage && !run.cancelled) turn.stageDone(data);
      };
      source.addEventListener('message', onMessage);
      source.addEventListener('stage', onMessage);
      source.addEventListener('result', onMessage);
      source.addEventListener('error', (event) => {
        if (event.data) { onMessage(event); return; }
        // The stream ended or broke before a result: ask for the result directly.
        if (settled) return;
        settled = true;
        source.close();
        if (!run.cancelled) poll(id, run).then(resolve, reject);
      });
    });
  }

  async function poll(id, run) {
    const deadline = Date.now() + POLL_DEADLINE_MS;
    while (Date.now() < deadline && !run.cancelled) {
      let response;
      try {
        response = await fetch(api(`v1/questions/${encodeURIComponent(id)}`), { headers: { Accept: 'application/json' } });
      } catch (_) {
        response = null;
      }
      if (response) {
        const body = await readJson(response);
        if (response.ok && isResult(body)) return body;
        if (!response.ok) throw new HttpError(errorMessage(body, response.status));
        // 202: still running.
      }
      await new Promise((r) => window.setTimeout(r, POLL_INTERVAL_MS));
    }
    throw new HttpError('The answer took too long. Please try again.');
  }

  // ---- conversations: the thread's id, its permalink (?c=<id>), turns, conflict choices ----

  const conversation = { id: null };

  async function requestJson(path, options) {
    let response;
    try {
      response = await fetch(api(path), {
        headers: { 'Content-Type': 'application/json', Accept: 'application/json' }, ...options,
      });
    } catch (_) {
      throw new HttpError('Could not reach the navigator service. Check the connection and try again.');
    }
    const body = await readJson(response);
    if (!response.ok) {
      const error = new HttpError(errorMessage(body, response.status));
      error.status = response.status;
      throw error;
    }
    return body;
  }

  /** Put the conversation in the address bar, so reloading or sharing the URL reopens it. */
  function showConversation(id) {
    conversation.id = id;
    const url = new URL(window.location.href);
    if (id) url.searchParams.set('c', id); else url.searchParams.delete('c');
    window.history.replaceState(null, '', url);
    const bar = $('conversation-bar');
    bar.hidden = !id;
    if (id) $('conversation-link').href = url.toString();
  }

  async function startConversation() {
    const body = await requestJson('v1/conversations', { method: 'POST' });
    showConversation(body.id);
  }

  /** Post a turn to the conversation (a new one for the main box); the reply names the
   *  question to follow, as POST /v1/questions does. An expired conversation starts afresh. */
  async function postTurn(question, { fresh, condition, focus }) {
    if (fresh || !conversation.id) await startConversation();
    const body = JSON.stringify({ question, condition: condition || null, focus: focus || null, wait: false });
    const path = () => `v1/conversations/${encodeURIComponent(conversation.id)}/questions`;
    try {
      return await requestJson(path(), { method: 'POST', body });
    } catch (error) {
      if (error.status !== 404 || fresh) throw error;
      await startConversation();
      return { ...(await requestJson(path(), { method: 'POST', body })), restarted: true };
    }
  }

  /** Mark a turn with its number and how it was read (a follow-up says so). */
  function markTurn(turn, number, followUp, restarted = false) {
    if (number) turn.node.dataset.turn = String(number);
    if (restarted) {
      turn.node.querySelector('.turn-question').after(el('p', { class: 'turn-kind conversation-restarted' },
        'The earlier conversation had expired, so this was asked in a new one, on its own.'));
    }
    const kind = followUp && followUp.kind;
    if (!kind) return;
    turn.node.dataset.kind = kind;
    if (kind === 'follow_up') {
      turn.node.querySelector('.turn-question').after(el('p', { class: 'turn-kind' },
        'Follow-up: read with the earlier questions in this conversation.'));
    }
  }

  /** Reopen the conversation named in the URL: every turn with its answer or refusal card. */
  async function reopenConversation(id) {
    const thread = $('thread');
    let body;
    try {
      body = await requestJson(`v1/conversations/${encodeURIComponent(id)}`, { method: 'GET' });
    } catch (error) {
      showConversation(null);
      thread.replaceChildren(el('li', { class: 'turn notice conversation-missing', role: 'status' },
        error.status === 404 ? 'That conversation has expired or does not exist. Ask a question to start a new one.' : error.message));
      return;
    }
    showConversation(body.id);
    thread.replaceChildren();
    for (const result of body.turns || []) {
      const turn = new Turn(result.question);
      thread.append(turn.node);
      turn.showResult(result);
      markTurn(turn, result.turn, result.follow_up);
    }
    $('followup-form').hidden = !(body.turns || []).length;
  }

  function newConversation() {
    cancelCurrent(null);
    showConversation(null);
    $('thread').replaceChildren();
    panel.close();
    $('followup-form').hidden = true;
    $('question').value = '';
    $('question').focus();
    announce('New conversation.');
  }

  // ---- the page's flow ----------------------------------------------------------------------

  let current = null; // the run in flight: {turn, source, cancelled}

  // Stop the run in flight: its stream closed, its late replies ignored; with a reason, its turn says why.
  function cancelCurrent(reason) {
    if (!current) return;
    current.cancelled = true;
    if (current.source) current.source.close();
    if (reason) current.turn.stop(reason);
    current = null;
  }

  function fieldError(textarea, errorNode, message) {
    if (message) {
      errorNode.textContent = message;
      errorNode.hidden = false;
      textarea.setAttribute('aria-invalid', 'true');
      textarea.focus();
    } else {
      errorNode.textContent = '';
      errorNode.hidden = true;
      textarea.removeAttribute('aria-invalid');
    }
  }

  /** On a phone the question box and the turn's heading push the answer below the fold: once
   *  it lands, when its first sentence (or card) is not wholly on screen, the turn's question
   *  goes to the top of the screen so the answer shows under it. */
  function reveal(turn) {
    const first = turn.result.querySelector('.sentence, .card');
    if (!first || first.getBoundingClientRect().bottom <= window.innerHeight) return;
    turn.node.scrollIntoView({ block: 'start' });
    // Focus left in the question box keeps a phone's keyboard open over the answer: it moves to
    // the turn's question, from where reading (and tabbing) goes on into the answer.
    if (document.activeElement instanceof HTMLTextAreaElement) turn.heading.focus({ preventScroll: true });
  }

  async function ask(question, { fresh, condition = null, focus = null }) {
    cancelCurrent('Stopped: you asked another question.');
    const thread = $('thread');
    if (fresh) {
      thread.replaceChildren();
      panel.close();
    }
    $('followup-form').hidden = true;
    const turn = new Turn(question);
    thread.append(turn.node);
    turn.node.scrollIntoView({ block: 'nearest' });
    const run = { turn, source: null, cancelled: false };
    current = run;
    announce('Question sent. Working on it.');

    try {
      const reply = await postTurn(question, { fresh, condition, focus });
      if (run.cancelled) return;
      let result;
      if (isResult(reply)) {
        result = reply;
      } else if (reply && reply.id) {
        turn.stageDone({ stage: 'received' });
        result = await follow(reply.id, turn, run);
      } else {
        throw new HttpError('The server did not return a question id.');
      }
      if (run.cancelled) return;
      turn.showResult(result);
      markTurn(turn, reply.turn, reply.follow_up, reply.restarted);
      reveal(turn);
    } catch (error) {
      if (run.cancelled) return;
      const message = error instanceof HttpError ? error.message : `Something went wrong in the page: ${error.message}`;
      turn.showError('The question could not be answered', message);
    } finally {
      if (current === run) {
        current = null;
        $('followup-form').hidden = false;
      }
    }
  }

  function wireForm(formId, textareaId, errorId, fresh) {
    const form = $(formId);
    const textarea = $(textareaId);
    const errorNode = $(errorId);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const question = textarea.value.trim();
      if (!question) {
        fieldError(textarea, errorNode, 'Type a question first: the box is empty.');
        return;
      }
      fieldError(textarea, errorNode, null);
      if (!fresh) textarea.value = '';
      ask(question, { fresh });
    });
    textarea.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        form.requestSubmit();
      }
    });
    textarea.addEventListener('input', () => {
      if (!errorNode.hidden && textarea.value.trim()) fieldError(textarea, errorNode, null);
      // Grow with the question (up to a limit) so it can be read back before asking.
      textarea.style.height = 'auto';
      textarea.style.height = `${Math.min(textarea.scrollHeight + 4, 240)}px`;
    });
  }

  document.addEventListener('DOMContentLoaded', () => {
    wireForm('ask-form', 'question', 'question-error', true);
    wireForm('followup-form', 'followup', 'followup-error', false);
    $('new-conversation').addEventListener('click', newConversation);
    const reopen = new URLSearchParams(window.location.search).get('c');
    if (reopen) reopenConversation(reopen);
    $('source-close').addEventListener('click', () => panel.close());
    document.addEventListener('keydown', (event) => {
      if (event.key === 'Escape' && !$('source-panel').hidden) panel.close();
    });
  });
})();
