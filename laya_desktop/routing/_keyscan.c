/* Many-keyword search for the router, built for a cold CPU.

The engine decides a route once per request, after the HTTP handling has pushed the router's
code and tables out of the CPU's caches, so a search costs what it touches: hyperscan's tables
for 316 keywords are 109 KB, and its call alone costs 7 us cold. This one touches a bitmap of a
few KB and, for the few positions the bitmap lets through, one hash table slot.

Each keyword is found by its anchor: its first bytes, as many as the shortest keyword has (at
most four). At every text position the text's anchor there (ASCII letters folded to lower case)
is hashed into the bitmap; a set bit sends the position to the table, whose slots hold (anchor,
keyword) pairs; a keyword whose anchor equals the text's is compared in full. Every keyword is
reported once, however often it occurs, overlapping matches included (as hyperscan's SINGLEMATCH
literal mode does). It reads about 1 ns a byte warm, hyperscan's SIMD about 0.3.

Keywords are lower case. Letters A-Z in the text match their lower case; other bytes match as
they are (the router lowers a non-ASCII text before encoding it). Keywords may not contain NUL:
the router joins a request's user messages with NUL, and the methods taking messages read each
on its own.

route_chat is routing/router.py's decide_body for the common request, a chat whose contents are
strings with ASCII user text, in one call: each Python call and bytecode costs a microsecond or
so on that cold CPU, and a whole decision in Python took 16 us there against 3 us warm.
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

/* 64 filter bits per keyword: about one position in 64 of a text reaches the table when no
   keyword is there. Fewer (a smaller filter) or more were slower in the engine (bench/route_engine.py). */
#define FILTER_BITS_PER_KEYWORD 64
#define SEEN_ON_STACK 1024   /* bytes: 8,192 keywords' found flags without an allocation */
#define TEXT_ON_STACK 4096   /* bytes of a text folded without an allocation */

typedef struct {
    uint32_t anchor;   /* the anchor's bytes, little-endian, zero-padded */
    uint32_t pattern;  /* keyword index + 1; 0 marks an empty slot */
} Slot;

typedef struct {
    PyObject_HEAD
    Py_ssize_t n_patterns;
    unsigned anchor_length;  /* the shortest keyword's length, at most 4 */
    uint32_t anchor_mask;
    unsigned filter_shift;   /* 32 - log2(bits in the filter) */
    uint64_t *filter;        /* one bit per hash of an anchor */
    Slot *table;
    uint32_t table_mask;     /* slots - 1 */
    unsigned table_shift;
    char *blob;              /* every keyword's bytes, one after another */
    Py_ssize_t *offset;      /* keyword k is blob[offset[k]:offset[k + 1]] */
    Py_ssize_t *rule_start;  /* set_rules: keyword k's rules are rule_ids[rule_start[k]:...[k + 1]] */
    Py_ssize_t *rule_ids;
    /* set_tiers: the same keywords split into tiers in rule order, for texts dense in keywords */
    PyObject *tiers;         /* tuple of (KeywordScanner, rules resolved below, users as bytes) */
    double hits_mean;        /* keywords found per chat lately: a running mean, up at once */
    double dense_hits;       /* from this mean on, route_chat reads tier by tier */
} Scanner;

/* What a scan does with each keyword it finds: adds it to a list, or keeps the first rule of
   `needed` (a little-endian bitset of rule indices) that has it. */
typedef struct {
    PyObject *hits;
    const unsigned char *needed;
    Py_ssize_t needed_bytes;
    Py_ssize_t best;      /* the lowest such rule so far; PY_SSIZE_T_MAX when none */
    Py_ssize_t first;     /* needed's lowest rule: found, nothing can beat it */
    Py_ssize_t found;     /* keywords found, for the running mean */
} Sink;

static const uint32_t GOLDEN = 0x9E3779B1u;
static const uint32_t LENGTH_MASK[5] = {0, 0xFFu, 0xFFFFu, 0xFFFFFFu, 0xFFFFFFFFu};
static PyObject *KEY_CONTENT, *KEY_ROLE;

static inline unsigned char fold1(unsigned char c) {
    return (c >= 'A' && c <= 'Z') ? (unsigned char)(c | 0x20) : c;
}

static void free_tables(Scanner *s) {
    PyMem_Free(s->filter);
    PyMem_Free(s->table);
    PyMem_Free(s->blob);
    PyMem_Free(s->offset);
    PyMem_Free(s->rule_start);
    PyMem_Free(s->rule_ids);
    s->filter = NULL, s->table = NULL, s->blob = NULL, s->offset = NULL;
    s->rule_start = NULL, s->rule_ids = NULL;
    s->n_patterns = 0;
}

static void Scanner_dealloc(Scanner *s) {
    free_tables(s);
    Py_CLEAR(s->tiers);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static int Scanner_init(Scanner *s, PyObject *args, PyObject *kwds) {
    PyObject *patterns;
    static char *kwlist[] = {"patterns", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O:KeywordScanner", kwlist, &patterns)) return -1;
    PyObject *seq = PySequence_Fast(patterns, "patterns must be a sequence of bytes");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq), total = 0, shortest = 4;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *p = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyBytes_Check(p)) {
            Py_DECREF(seq);
            PyErr_Format(PyExc_TypeError, "keyword %zd is not bytes", i);
            return -1;
        }
        Py_ssize_t len = PyBytes_GET_SIZE(p);
        if (len == 0 || memchr(PyBytes_AS_STRING(p), 0, (size_t)len)) {
            Py_DECREF(seq);
            PyErr_Format(PyExc_ValueError, "keyword %zd is empty or holds a NUL byte", i);
            return -1;
        }
        total += len;
        if (len < shortest) shortest = len;
    }
    if (n >= (Py_ssize_t)(UINT32_MAX / 4)) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "too many keywords");
        return -1;
    }
    unsigned filter_log2 = 10, table_log2 = 4;
    while (((Py_ssize_t)1 << filter_log2) < FILTER_BITS_PER_KEYWORD * n && filter_log2 < 30) filter_log2++;
    while (((Py_ssize_t)1 << table_log2) < 2 * n) table_log2++;

    free_tables(s);
    s->filter = PyMem_Calloc((size_t)1 << (filter_log2 - 6), sizeof(uint64_t));
    s->table = PyMem_Calloc((size_t)1 << table_log2, sizeof(Slot));
    s->blob = PyMem_Malloc(total ? (size_t)total : 1);
    s->offset = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(n + 1));
    if (!s->filter || !s->table || !s->blob || !s->offset) {
        free_tables(s);
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    s->n_patterns = n;
    s->anchor_length = (unsigned)shortest;
    s->anchor_mask = LENGTH_MASK[shortest];
    s->filter_shift = 32 - filter_log2;
    s->table_mask = ((uint32_t)1 << table_log2) - 1;
    s->table_shift = 32 - table_log2;
    Py_ssize_t at = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *p = PySequence_Fast_GET_ITEM(seq, i);
        Py_ssize_t len = PyBytes_GET_SIZE(p);
        const unsigned char *bytes = (const unsigned char *)PyBytes_AS_STRING(p);
        s->offset[i] = at;
        for (Py_ssize_t k = 0; k < len; k++) s->blob[at + k] = (char)fold1(bytes[k]);
        uint32_t anchor = 0;
        memcpy(&anchor, s->blob + at, s->anchor_length);
        at += len;
        uint32_t h = (anchor * GOLDEN) >> s->filter_shift;
        s->filter[h >> 6] |= (uint64_t)1 << (h & 63);
        uint32_t slot = (anchor * GOLDEN) >> s->table_shift;
        while (s->table[slot].pattern) slot = (slot + 1) & s->table_mask;
        s->table[slot].anchor = anchor;
        s->table[slot].pattern = (uint32_t)i + 1;
    }
    s->offset[n] = at;
    Py_DECREF(seq);
    return 0;
}

/* Keyword k found: 0 to go on, 1 when nothing found later can change the answer, -1 on error. */
static inline int found_keyword(const Scanner *s, Py_ssize_t k, Sink *sink) {
    if (sink->hits) {
        PyObject *id = PyLong_FromSsize_t(k);
        int failed = !id || PyList_Append(sink->hits, id) < 0;
        Py_XDECREF(id);
        return failed ? -1 : 0;
    }
    sink->found++;
    for (Py_ssize_t r = s->rule_start[k]; r < s->rule_start[k + 1]; r++) {
        Py_ssize_t rule = s->rule_ids[r];  /* ascending: the first one needed is the lowest */
        if (rule >= sink->best) break;
        if ((rule >> 3) < sink->needed_bytes && (sink->needed[rule >> 3] >> (rule & 7)) & 1) {
            sink->best = rule;
            break;
        }
    }
    return sink->best == sink->first;
}

/* Every keyword in text[0:n], a folded text followed by at least 3 readable bytes, that `seen`
   does not hold yet goes to the sink. 0 when done, 1 when the sink needs no more, -1 on error. */
static int scan_folded(const Scanner *s, const unsigned char *text, Py_ssize_t n,
                       unsigned char *seen, Sink *sink) {
    const uint64_t *filter = s->filter;
    const unsigned shift = s->filter_shift;
    const uint32_t mask = s->anchor_mask;
    for (Py_ssize_t i = 0; i + (Py_ssize_t)s->anchor_length <= n; i++) {
        uint32_t anchor;
        memcpy(&anchor, text + i, 4);
        anchor &= mask;
        uint32_t h = (anchor * GOLDEN) >> shift;
        if (!((filter[h >> 6] >> (h & 63)) & 1)) continue;
        uint32_t slot = (anchor * GOLDEN) >> s->table_shift;
        for (; s->table[slot].pattern; slot = (slot + 1) & s->table_mask) {
            if (s->table[slot].anchor != anchor) continue;
            Py_ssize_t k = (Py_ssize_t)s->table[slot].pattern - 1;
            Py_ssize_t len = s->offset[k + 1] - s->offset[k];
            if (len > n - i || (seen[k >> 3] & (1u << (k & 7)))) continue;
            if (memcmp(text + i, s->blob + s->offset[k], (size_t)len) != 0) continue;
            seen[k >> 3] |= (unsigned char)(1u << (k & 7));
            int done = found_keyword(s, k, sink);
            if (done) return done;
        }
    }
    return 0;
}

/* Scans each text (bytes, or ASCII str when `parts`) into the sink. 0 when done, 1 when a part
   is not ASCII (the caller lowers and encodes the text instead), -1 on error. */
static int scan_texts(const Scanner *s, PyObject *const *texts, Py_ssize_t count, int parts,
                      Sink *sink) {
    unsigned char stack_seen[SEEN_ON_STACK], stack_text[TEXT_ON_STACK + 4];
    size_t seen_bytes = (size_t)(s->n_patterns + 7) / 8;
    unsigned char *seen = seen_bytes <= SEEN_ON_STACK ? stack_seen : PyMem_Malloc(seen_bytes);
    if (!seen) {
        PyErr_NoMemory();
        return -1;
    }
    memset(seen, 0, seen_bytes);
    int status = 0;
    for (Py_ssize_t t = 0; status == 0 && t < count; t++) {
        PyObject *text = texts[t];
        const unsigned char *data;
        Py_ssize_t n;
        if (parts) {
            if (!PyUnicode_Check(text)) continue;  /* not text: nothing to find, as text_parts reads it */
            if (!PyUnicode_IS_ASCII(text)) {
                status = 1;
                break;
            }
            data = (const unsigned char *)PyUnicode_DATA(text);
            n = PyUnicode_GET_LENGTH(text);
        } else {
            data = (const unsigned char *)PyBytes_AS_STRING(text);
            n = PyBytes_GET_SIZE(text);
        }
        unsigned char *folded = n <= TEXT_ON_STACK ? stack_text : PyMem_Malloc((size_t)n + 4);
        if (!folded) {
            PyErr_NoMemory();
            status = -1;
            break;
        }
        for (Py_ssize_t i = 0; i < n; i++) folded[i] = fold1(data[i]);
        memset(folded + n, 0, 4);
        int done = scan_folded(s, folded, n, seen, sink);
        if (folded != stack_text) PyMem_Free(folded);
        if (done < 0) status = -1;
        else if (done > 0) break;  /* the sink has its answer */
    }
    if (seen != stack_seen) PyMem_Free(seen);
    return status;
}

static PyObject *hits_of(Scanner *s, PyObject *const *texts, Py_ssize_t count, int parts) {
    Sink sink = {PyList_New(0), NULL, 0, PY_SSIZE_T_MAX, -1, 0};
    if (!sink.hits) return NULL;
    int status = scan_texts(s, texts, count, parts, &sink);
    if (status == 0) return sink.hits;
    Py_DECREF(sink.hits);
    if (status < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Scanner_scan(Scanner *s, PyObject *data) {
    if (!PyBytes_Check(data)) {
        PyErr_SetString(PyExc_TypeError, "scan() takes bytes");
        return NULL;
    }
    return hits_of(s, &data, 1, 0);
}

static PyObject *Scanner_scan_parts(Scanner *s, PyObject *parts) {
    if (!PyList_Check(parts)) {
        PyErr_SetString(PyExc_TypeError, "scan_parts() takes a list of str");
        return NULL;
    }
    return hits_of(s, PySequence_Fast_ITEMS(parts), PyList_GET_SIZE(parts), 1);
}

static PyObject *Scanner_set_rules(Scanner *s, PyObject *rules) {
    PyObject *seq = PySequence_Fast(rules, "set_rules() takes a list of lists of rule indices");
    if (!seq) return NULL;
    if (PySequence_Fast_GET_SIZE(seq) != s->n_patterns) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "set_rules() needs one list of rules per keyword");
        return NULL;
    }
    Py_ssize_t total = 0;
    for (Py_ssize_t k = 0; k < s->n_patterns; k++) {
        Py_ssize_t m = PyObject_Length(PySequence_Fast_GET_ITEM(seq, k));
        if (m < 0) {
            Py_DECREF(seq);
            return NULL;
        }
        total += m;
    }
    Py_ssize_t *start = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(s->n_patterns + 1));
    Py_ssize_t *ids = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(total ? total : 1));
    if (!start || !ids) {
        PyMem_Free(start), PyMem_Free(ids);
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    Py_ssize_t at = 0;
    for (Py_ssize_t k = 0; k < s->n_patterns; k++) {
        start[k] = at;
        PyObject *list = PySequence_Fast(PySequence_Fast_GET_ITEM(seq, k), "rules of a keyword");
        if (!list) goto fail;
        Py_ssize_t previous = -1;
        for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(list) && at < total; j++) {
            Py_ssize_t rule = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(list, j));
            if (rule < 0 || rule <= previous) {
                Py_DECREF(list);
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_ValueError, "a keyword's rules must be ascending indices");
                goto fail;
            }
            ids[at++] = previous = rule;
        }
        Py_DECREF(list);
    }
    start[s->n_patterns] = at;
    PyMem_Free(s->rule_start), PyMem_Free(s->rule_ids);
    s->rule_start = start, s->rule_ids = ids;
    Py_DECREF(seq);
    Py_RETURN_NONE;
fail:
    PyMem_Free(start), PyMem_Free(ids);
    Py_DECREF(seq);
    return NULL;
}

static PyObject *Scanner_set_tiers(Scanner *s, PyObject *args) {
    PyObject *tiers;
    double dense_hits;
    if (!PyArg_ParseTuple(args, "O!d:set_tiers", &PyTuple_Type, &tiers, &dense_hits)) return NULL;
    for (Py_ssize_t t = 0; t < PyTuple_GET_SIZE(tiers); t++) {
        PyObject *tier = PyTuple_GET_ITEM(tiers, t);
        if (!PyTuple_Check(tier) || PyTuple_GET_SIZE(tier) != 3
                || !PyObject_TypeCheck(PyTuple_GET_ITEM(tier, 0), Py_TYPE(s))
                || !((Scanner *)PyTuple_GET_ITEM(tier, 0))->rule_start
                || !PyLong_Check(PyTuple_GET_ITEM(tier, 1))
                || !PyBytes_Check(PyTuple_GET_ITEM(tier, 2))) {
            PyErr_SetString(PyExc_TypeError, "a tier is (KeywordScanner with its rules set, "
                                             "rules resolved below it: int, its users: bytes)");
            return NULL;
        }
    }
    Py_INCREF(tiers);
    Py_XSETREF(s->tiers, tiers);
    s->dense_hits = dense_hits;
    Py_RETURN_NONE;
}

/* The lowest rule of the bitset needed[0:n] at or after `from`; PY_SSIZE_T_MAX when none. */
static Py_ssize_t next_rule(const unsigned char *needed, Py_ssize_t n, Py_ssize_t from) {
    for (Py_ssize_t rule = from; (rule >> 3) < n; rule++) {
        if (!(rule & 7) && !needed[rule >> 3]) {
            rule += 7;
            continue;
        }
        if ((needed[rule >> 3] >> (rule & 7)) & 1) return rule;
    }
    return PY_SSIZE_T_MAX;
}

static int overlaps(PyObject *users, const unsigned char *needed, Py_ssize_t n) {
    const unsigned char *bits = (const unsigned char *)PyBytes_AS_STRING(users);
    Py_ssize_t common = PyBytes_GET_SIZE(users) < n ? PyBytes_GET_SIZE(users) : n;
    for (Py_ssize_t i = 0; i < common; i++)
        if (bits[i] & needed[i]) return 1;
    return 0;
}

/* The texts' keywords into the sink, tier by tier: a tier whose users need none is skipped, and
   once no needed rule can still beat the best one found the rest are. Keywords found, scaled to
   all keywords, go to *found. 0, or -1 on error. */
static int scan_tiers(Scanner *s, PyObject *const *texts, Py_ssize_t count, Sink *sink,
                      double *found) {
    Py_ssize_t read = 0, seen = 0;
    for (Py_ssize_t t = 0; t < PyTuple_GET_SIZE(s->tiers); t++) {
        PyObject *tier = PyTuple_GET_ITEM(s->tiers, t);
        Scanner *scanner = (Scanner *)PyTuple_GET_ITEM(tier, 0);
        if (overlaps(PyTuple_GET_ITEM(tier, 2), sink->needed, sink->needed_bytes)) {
            sink->found = 0;
            if (scan_texts(scanner, texts, count, 1, sink) < 0) return -1;
            read += scanner->n_patterns, seen += sink->found;
        }
        Py_ssize_t resolved = PyLong_AsSsize_t(PyTuple_GET_ITEM(tier, 1));
        if (resolved == -1 && PyErr_Occurred()) return -1;
        if (next_rule(sink->needed, sink->needed_bytes, resolved) >= sink->best) break;
    }
    *found = read ? (double)seen * (double)s->n_patterns / (double)read : 0.0;
    return 0;
}

/* Appends to `user` the content of each user message and adds every message's code points to
   *chars: the common shape of routing/request.py's text_parts (string contents, ASCII user
   text). 1 when the messages have another shape (text_parts reads them then), -1 on error. */
static int read_messages(PyObject *messages, PyObject *user, Py_ssize_t *chars) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(messages); i++) {
        PyObject *message = PyList_GET_ITEM(messages, i);
        if (!PyDict_Check(message)) continue;      /* text_parts skips it too */
        if (!PyDict_CheckExact(message)) return 1;
        PyObject *content = PyDict_GetItemWithError(message, KEY_CONTENT);
        if (!content) {
            if (PyErr_Occurred()) return -1;
            continue;
        }
        if (!PyUnicode_CheckExact(content)) {
            if (PyUnicode_Check(content) || PyList_Check(content)) return 1;
            continue;                              /* None, a number: no text */
        }
        *chars += PyUnicode_GET_LENGTH(content);
        PyObject *role = PyDict_GetItemWithError(message, KEY_ROLE);
        if (!role && PyErr_Occurred()) return -1;
        if (role && PyUnicode_Check(role) && PyUnicode_CompareWithASCIIString(role, "user") == 0) {
            if (!PyUnicode_IS_ASCII(content)) return 1;
            if (PyList_Append(user, content) < 0) return -1;
        }
    }
    return 0;
}

static Py_ssize_t bisect_right(PyObject *bounds, Py_ssize_t value) {
    Py_ssize_t lo = 0, hi = PyList_GET_SIZE(bounds);
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        Py_ssize_t bound = PyLong_AsSsize_t(PyList_GET_ITEM(bounds, mid));
        if (bound == -1 && PyErr_Occurred()) return -1;
        if (value < bound) hi = mid; else lo = mid + 1;
    }
    return lo;
}

static PyObject *Scanner_route_chat(Scanner *s, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 7 || !PyList_Check(args[4]) || !PyDict_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError, "route_chat(messages, path, model, tags, bounds: list, "
                                         "prefilters: dict, prefilter)");
        return NULL;
    }
    if (!s->rule_start) {
        PyErr_SetString(PyExc_RuntimeError, "route_chat() before set_rules()");
        return NULL;
    }
    PyObject *messages = args[0];
    if (!PyList_Check(messages)) Py_RETURN_NONE;
    PyObject *user = PyList_New(0), *size = NULL, *key = NULL, *known = NULL, *result = NULL;
    if (!user) return NULL;
    Py_ssize_t chars = 0;
    int shape = read_messages(messages, user, &chars);
    if (shape != 0) {
        if (shape == 1) result = Py_NewRef(Py_None);
        goto done;
    }
    Py_ssize_t range = bisect_right(args[4], chars);
    if (range < 0 || !(size = PyLong_FromSsize_t(range))) goto done;
    if (!(key = PyTuple_Pack(4, args[1], args[2], args[3], size))) goto done;
    known = PyDict_GetItemWithError(args[5], key);
    if (known) {
        Py_INCREF(known);
    } else if (!PyErr_Occurred()) {  /* a key not seen yet: the router works it out and keeps it */
        known = PyObject_CallFunction(args[6], "OOOOn", key, args[1], args[2], args[3], chars);
    }
    if (!known) goto done;
    /* the router's (candidates, winner, needed, needed as little-endian bytes, winner's index) */
    PyObject *needed;
    Py_ssize_t winner;
    if (!PyTuple_Check(known) || PyTuple_GET_SIZE(known) != 5
            || !PyBytes_Check(needed = PyTuple_GET_ITEM(known, 3))) {
        PyErr_SetString(PyExc_TypeError, "a prefilter is (candidates, winner, needed, "
                                         "needed_bytes, winner_index)");
        goto done;
    }
    if ((winner = PyLong_AsSsize_t(PyTuple_GET_ITEM(known, 4))) == -1 && PyErr_Occurred()) goto done;
    if (PyBytes_GET_SIZE(needed) > 0) {
        const unsigned char *bits = (const unsigned char *)PyBytes_AS_STRING(needed);
        Py_ssize_t first = 0;
        while (!bits[first >> 3]) first += 8;  /* needed is not 0: a byte of it is set */
        while (!((bits[first >> 3] >> (first & 7)) & 1)) first++;
        Sink sink = {NULL, bits, PyBytes_GET_SIZE(needed), PY_SSIZE_T_MAX, first, 0};
        PyObject *const *texts = PySequence_Fast_ITEMS(user);
        double found;
        if (s->tiers && s->hits_mean >= s->dense_hits) {
            if (scan_tiers(s, texts, PyList_GET_SIZE(user), &sink, &found) < 0) goto done;
        } else {
            if (scan_texts(s, texts, PyList_GET_SIZE(user), 1, &sink) < 0) goto done;
            found = (double)sink.found;  /* up to the first needed rule, when it stopped there */
        }
        s->hits_mean = found > s->hits_mean ? found : s->hits_mean + (found - s->hits_mean) * 0.125;
        if (sink.best != PY_SSIZE_T_MAX) winner = sink.best;  /* needed lies before the winner */
    }
    result = PyLong_FromSsize_t(winner);
done:
    Py_DECREF(user);
    Py_XDECREF(size);
    Py_XDECREF(key);
    Py_XDECREF(known);
    return result;
}

static PyObject *Scanner_footprint(Scanner *s, PyObject *Py_UNUSED(ignored)) {
    size_t filter = ((size_t)1 << (32 - s->filter_shift)) / 8;
    size_t table = ((size_t)s->table_mask + 1) * sizeof(Slot);
    return Py_BuildValue("{s:n,s:n,s:n}", "filter_bytes", (Py_ssize_t)filter,
                         "table_bytes", (Py_ssize_t)table,
                         "keyword_bytes", s->offset ? s->offset[s->n_patterns] : 0);
}

static PyMethodDef Scanner_methods[] = {
    {"scan", (PyCFunction)Scanner_scan, METH_O,
     "scan(data: bytes) -> list[int]: the index of every keyword in data, each once."},
    {"scan_parts", (PyCFunction)Scanner_scan_parts, METH_O,
     "scan_parts(parts: list[str]) -> list[int] | None: the keywords found in any of the texts,\n"
     "each read on its own; None when one of them is not ASCII (lower and encode it, then scan)."},
    {"set_rules", (PyCFunction)Scanner_set_rules, METH_O,
     "set_rules(rules: list[list[int]]): for each keyword, the ascending indices of the rules\n"
     "having it (route_chat needs them)."},
    {"set_tiers", (PyCFunction)Scanner_set_tiers, METH_VARARGS,
     "set_tiers(tiers: tuple[tuple[KeywordScanner, int, bytes], ...], dense_hits: float): the same\n"
     "keywords split into tiers in rule order, each a scanner with its rules set, the rules below\n"
     "which every rule is resolved once it is read, and the rules having its keywords (a\n"
     "little-endian bitset). route_chat reads tier by tier while the chats it read lately found\n"
     "dense_hits keywords or more on average."},
    {"route_chat", (PyCFunction)(void (*)(void))Scanner_route_chat, METH_FASTCALL,
     "route_chat(messages, path, model, tags, bounds, prefilters, prefilter) -> int | None:\n"
     "routing/router.py's decide_body for a chat whose contents are strings and whose user text\n"
     "is ASCII: the winning rule's index, -1 for none; None for any other shape. The prompt's\n"
     "code points pick a range of `bounds` (bisect_right); prefilters[(path, model, tags, range)]\n"
     "is (candidates, winner, needed, needed as little-endian bytes, winner's index or -1), made\n"
     "by prefilter(key, path, model, tags, chars) when missing. The user text is scanned only\n"
     "when `needed` has rules, and only until the first of them is found."},
    {"footprint", (PyCFunction)Scanner_footprint, METH_NOARGS,
     "footprint() -> dict: the bytes of the filter, the table and the keywords."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef Scanner_members[] = {
    {"hits_mean", T_DOUBLE, offsetof(Scanner, hits_mean), 0,
     "keywords route_chat found per chat lately (a running mean that jumps up at once)"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "laya_desktop.routing._keyscan.KeywordScanner",
    .tp_doc = "KeywordScanner(patterns: list[bytes]): find many lower-case keywords in a text.",
    .tp_basicsize = sizeof(Scanner),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Scanner_init,
    .tp_dealloc = (destructor)Scanner_dealloc,
    .tp_methods = Scanner_methods,
    .tp_members = Scanner_members,
};

static struct PyModuleDef keyscan_module = {
    PyModuleDef_HEAD_INIT, "_keyscan",
    "The router's keyword search: a small filter and table, cheap on a cold CPU.", -1,
    NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__keyscan(void) {
    if (PyType_Ready(&ScannerType) < 0) return NULL;
    KEY_CONTENT = PyUnicode_InternFromString("content");
    KEY_ROLE = PyUnicode_InternFromString("role");
    if (!KEY_CONTENT || !KEY_ROLE) return NULL;
    PyObject *m = PyModule_Create(&keyscan_module);
    if (!m) return NULL;
    Py_INCREF(&ScannerType);
    if (PyModule_AddObject(m, "KeywordScanner", (PyObject *)&ScannerType) < 0) {
        Py_DECREF(&ScannerType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
