package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
)

// This file holds the two hot loops of a run: splitting a response body into SSE lines
// and reading the few facts a measurement needs out of each chunk's JSON. A load
// generator that spends its CPU decoding JSON into maps delays its own timestamps, so
// both are written to allocate nothing per chunk.

// errSyntax is the scanner's only error; it carries no position so that returning it
// costs nothing (the caller quotes the payload instead).
var errSyntax = errors.New("malformed chunk JSON")

// errTooLarge reports that a line or the body went over its cap.
var errTooLarge = errors.New("response too large")

// chunkInfo is what one SSE data payload says, as far as measurement needs.
type chunkInfo struct {
	// content: choices[0] carries generated text (a non-empty text, delta.content,
	// delta.reasoning_content or delta.reasoning string, or a non-empty
	// delta.tool_calls array).
	content bool
	// choices: the chunk has a non-empty choices array.
	choices bool
	// finish is choices[0].finish_reason when it is a string (raw, still escaped);
	// nil when null or absent. It aliases the payload.
	finish []byte
	usage  bool // a usage object was present (Ollama sends all-zero ones)
	// prompt and completion are usage.prompt_tokens and usage.completion_tokens.
	prompt, completion int
	// cached is usage.prompt_tokens_details.cached_tokens, the prompt tokens the engine
	// took from its prefix cache when it first scheduled the request (vLLM with
	// --enable-prompt-tokens-details, the OpenAI API); cachedOK says it was a number.
	cached   int
	cachedOK bool
	// text is the raw (still escaped) generated text of choices[0]: its text member, else
	// delta.content; nil when neither is a non-empty string. It aliases the payload.
	text []byte
	// errVal is the raw value of a top-level "error" member that is not null, or the
	// whole payload when it is an error object itself ("object": "error"). It aliases
	// the payload.
	errVal []byte
}

// parseChunk reads p (one data payload, a JSON object) into c, agreeing with
// encoding/json on every valid input (FuzzParseChunk checks it): a repeated key
// overrides, an escaped key is the same key, a member of an unexpected type reads as
// absent. It rejects malformed JSON where it walks, but is lenient inside literals.
func parseChunk(p []byte, c *chunkInfo) error {
	*c = chunkInfo{}
	s := scanner{b: p}
	var errMember []byte // last non-null "error" member
	objectErr := false   // last "object" member was "error"
	s.ws()
	if !s.eat('{') {
		return errSyntax
	}
	s.ws()
	if !s.eat('}') {
		for {
			s.ws()
			key, ok := s.key()
			if !ok {
				return errSyntax
			}
			s.ws()
			if !s.eat(':') {
				return errSyntax
			}
			s.ws()
			switch string(key) {
			case "choices":
				c.content, c.finish, c.choices, c.text = false, nil, false, nil
				if !s.choices(c) {
					return errSyntax
				}
			case "usage":
				c.usage, c.prompt, c.completion, c.cached, c.cachedOK = false, 0, 0, 0, false
				if !s.usage(c) {
					return errSyntax
				}
			case "error":
				errMember = nil
				start := s.i
				if s.null() {
					break
				}
				if !s.skip() {
					return errSyntax
				}
				errMember = p[start:s.i]
			case "object":
				// vLLM's ErrorResponse and some proxies stream {"object": "error", ...}.
				objectErr = false
				if s.peek() == '"' {
					v, ok := s.str()
					if !ok {
						return errSyntax
					}
					objectErr = string(v) == "error"
				} else if !s.skip() {
					return errSyntax
				}
			default:
				if !s.skip() {
					return errSyntax
				}
			}
			s.ws()
			if s.eat(',') {
				continue
			}
			if s.eat('}') {
				break
			}
			return errSyntax
		}
	}
	if err := s.end(); err != nil {
		return err
	}
	switch {
	case errMember != nil:
		c.errVal = errMember
	case objectErr:
		c.errVal = p
	}
	return nil
}

// scanner walks JSON bytes. Its methods report false on malformed input and never
// allocate.
type scanner struct {
	b    []byte
	i    int
	kbuf [32]byte // an unescaped key; longer ones match none of ours
	// lastStr is the raw contents of the last string textValue read.
	lastStr []byte
}

func (s *scanner) ws() {
	// Servers write compact JSON: the common case is one comparison.
	for s.i < len(s.b) && s.b[s.i] <= ' ' {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// end accepts trailing whitespace only.
func (s *scanner) end() error {
	s.ws()
	if s.i != len(s.b) {
		return errSyntax
	}
	return nil
}

// null consumes a null literal if one is next.
func (s *scanner) null() bool {
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// str consumes a string and returns its raw (still escaped) contents. A quote is
// escaped exactly when an odd number of backslashes precede it, so the search can
// jump from quote to quote with IndexByte instead of visiting every byte.
func (s *scanner) str() ([]byte, bool) {
	if !s.eat('"') {
		return nil, false
	}
	start := s.i
	// Most strings in a chunk are short keys and tokens: a plain loop beats the call
	// into IndexByte for them.
	for i, end := start, min(start+16, len(s.b)); i < end; i++ {
		if c := s.b[i]; c == '"' {
			s.i = i + 1
			return s.b[start:i], true
		} else if c == '\\' {
			break
		}
	}
	for {
		j := bytes.IndexByte(s.b[s.i:], '"')
		if j < 0 {
			return nil, false
		}
		q := s.i + j
		n := 0
		for k := q - 1; k >= start && s.b[k] == '\\'; k-- {
			n++
		}
		s.i = q + 1
		if n%2 == 0 {
			return s.b[start:q], true
		}
	}
}

// key consumes a member name. Names are compared raw unless they hold an escape, which
// no server writes but JSON allows ("te\u0078t" is "text").
func (s *scanner) key() ([]byte, bool) {
	k, ok := s.str()
	if !ok || bytes.IndexByte(k, '\\') < 0 {
		return k, ok
	}
	n := 0
	for i := 0; i < len(k); i++ {
		if n == len(s.kbuf) {
			return nil, true
		}
		c := k[i]
		if c == '\\' {
			i++
			if i >= len(k) {
				return nil, false
			}
			switch k[i] {
			case 'u':
				if i+4 >= len(k) {
					return nil, false
				}
				r := 0
				for _, h := range k[i+1 : i+5] {
					switch {
					case h >= '0' && h <= '9':
						r = r<<4 | int(h-'0')
					case h >= 'a' && h <= 'f':
						r = r<<4 | int(h-'a'+10)
					case h >= 'A' && h <= 'F':
						r = r<<4 | int(h-'A'+10)
					default:
						return nil, false
					}
				}
				i += 4
				if r >= 0x80 {
					return nil, true // not ASCII: none of our names
				}
				c = byte(r)
			case 'n':
				c = '\n'
			case 't':
				c = '\t'
			case 'r':
				c = '\r'
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			default: // '"', '\\', '/'
				c = k[i]
			}
		}
		s.kbuf[n] = c
		n++
	}
	return s.kbuf[:n], true
}

// skip consumes one value of any kind.
func (s *scanner) skip() bool {
	switch c := s.peek(); c {
	case '"':
		_, ok := s.str()
		return ok
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if _, ok := s.str(); !ok {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return true
				}
			}
			s.i++
		}
		return false
	case 0, ',', '}', ']', ':':
		return false
	default:
		// A number or a literal: up to the next delimiter.
		start := s.i
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return s.i > start
			}
			s.i++
		}
		return s.i > start
	}
}

// choices reads the first element of the choices array and skips the rest.
func (s *scanner) choices(c *chunkInfo) bool {
	if s.peek() != '[' {
		return s.skip() // null, or a type no server sends: no choices
	}
	s.i++
	s.ws()
	if s.eat(']') {
		return true
	}
	c.choices = true
	first := true
	for {
		s.ws()
		if first && s.peek() == '{' {
			if !s.choice(c) {
				return false
			}
		} else if !s.skip() {
			return false
		}
		first = false
		s.ws()
		if s.eat(',') {
			continue
		}
		return s.eat(']')
	}
}

// choice reads one element of choices. Each text-bearing member is tracked on its own
// so that a repeated key overrides, as in encoding/json. These are methods rather than
// closures so that nothing escapes to the heap.
func (s *scanner) choice(c *chunkInfo) bool {
	var text bool
	var rawText []byte
	var d deltaText
	s.i++ // '{'
	s.ws()
	if !s.eat('}') {
		for {
			s.ws()
			key, ok := s.key()
			if !ok {
				return false
			}
			s.ws()
			if !s.eat(':') {
				return false
			}
			s.ws()
			switch string(key) {
			case "text":
				if text, ok = s.textValue(); !ok {
					return false
				}
				rawText = nil
				if text {
					rawText = s.lastStr
				}
			case "delta":
				if !s.delta(&d) {
					return false
				}
			case "finish_reason":
				c.finish = nil
				if s.peek() == '"' {
					v, ok := s.str()
					if !ok {
						return false
					}
					c.finish = v
				} else if !s.skip() {
					return false
				}
			default:
				if !s.skip() {
					return false
				}
			}
			s.ws()
			if s.eat(',') {
				continue
			}
			if s.eat('}') {
				break
			}
			return false
		}
	}
	c.content = text || d.content || d.reasoningContent || d.reasoning || d.toolCalls
	c.text = rawText
	if c.text == nil && d.content {
		c.text = d.contentRaw
	}
	return true
}

// delta records which members of choices[0].delta carry generated text.
type deltaText struct {
	content, reasoningContent, reasoning, toolCalls bool
	contentRaw                                      []byte // content's raw string when non-empty
}

// textValue consumes a value and reports whether it is a non-empty string. A
// non-empty raw string always decodes to at least one character.
func (s *scanner) textValue() (nonEmpty, ok bool) {
	if s.peek() == '"' {
		v, ok := s.str()
		s.lastStr = v
		return ok && len(v) > 0, ok
	}
	return false, s.skip()
}

// appendUnescaped appends the JSON string contents raw (escapes and all) decoded. Raw
// text without a backslash is copied as it is; the rare escaped one goes through
// encoding/json, which decodes escapes and surrogate pairs as any server means them.
func appendUnescaped(dst, raw []byte) []byte {
	if bytes.IndexByte(raw, '\\') < 0 {
		return append(dst, raw...)
	}
	q := make([]byte, 0, len(raw)+2)
	q = append(append(append(q, '"'), raw...), '"')
	var s string
	if json.Unmarshal(q, &s) != nil {
		return append(dst, raw...)
	}
	return append(dst, s...)
}

func (s *scanner) delta(d *deltaText) bool {
	*d = deltaText{}
	if s.peek() != '{' {
		return s.skip()
	}
	s.i++
	s.ws()
	if s.eat('}') {
		return true
	}
	for {
		s.ws()
		key, ok := s.key()
		if !ok {
			return false
		}
		s.ws()
		if !s.eat(':') {
			return false
		}
		s.ws()
		switch string(key) {
		case "content":
			d.content, ok = s.textValue()
			d.contentRaw = nil
			if d.content {
				d.contentRaw = s.lastStr
			}
		case "reasoning_content":
			d.reasoningContent, ok = s.textValue()
		case "reasoning":
			d.reasoning, ok = s.textValue()
		case "tool_calls":
			// Tool-call arguments are generated tokens too; an empty array is not.
			d.toolCalls = false
			if s.peek() == '[' {
				start := s.i
				if ok = s.skip(); ok {
					d.toolCalls = len(bytes.TrimSpace(s.b[start+1:s.i-1])) > 0
				}
			} else {
				ok = s.skip()
			}
		default:
			ok = s.skip()
		}
		if !ok {
			return false
		}
		s.ws()
		if s.eat(',') {
			continue
		}
		return s.eat('}')
	}
}

// members walks the object at the cursor, calling member with each key and the cursor at
// its value; member must consume the value and report whether it could. A value other
// than an object is skipped (absent, as encoding/json reads a member of the wrong type).
func (s *scanner) members(member func(key []byte) bool) bool {
	if s.peek() != '{' {
		return s.skip()
	}
	s.i++
	s.ws()
	if s.eat('}') {
		return true
	}
	for {
		s.ws()
		key, ok := s.key()
		if !ok {
			return false
		}
		s.ws()
		if !s.eat(':') {
			return false
		}
		s.ws()
		if !member(key) {
			return false
		}
		s.ws()
		if s.eat(',') {
			continue
		}
		return s.eat('}')
	}
}

func (s *scanner) usage(c *chunkInfo) bool {
	c.usage = s.peek() == '{'
	return s.members(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "prompt_tokens":
			c.prompt, ok = s.count()
		case "completion_tokens":
			c.completion, ok = s.count()
		case "prompt_tokens_details":
			// usage.prompt_tokens_details.cached_tokens (an object; anything else reads as
			// absent).
			c.cached, c.cachedOK = 0, false
			ok = s.members(func(key []byte) bool {
				if string(key) != "cached_tokens" {
					return s.skip()
				}
				p := s.peek()
				var ok bool
				c.cached, ok = s.count()
				c.cachedOK = p == '-' || (p >= '0' && p <= '9')
				return ok
			})
		default:
			ok = s.skip()
		}
		return ok
	})
}

// maxCount caps a token count so that a hostile number cannot overflow a sum.
const maxCount = 1 << 40

// count reads a token count: a plain integer on every server seen, a number with a
// fraction or exponent through strconv (truncated), anything else (null, a string) as 0.
// Negative counts are 0.
func (s *scanner) count() (int, bool) {
	if c := s.peek(); c != '-' && (c < '0' || c > '9') {
		return 0, s.skip()
	}
	start := s.i
	n := 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		if n < maxCount {
			n = n*10 + int(s.b[s.i]-'0')
		}
		s.i++
	}
	n = min(n, maxCount)
	if s.i > start {
		switch s.peek() {
		case '.', 'e', 'E':
		default:
			return n, true
		}
	}
	s.i = start
	if !s.skip() {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(s.b[start:s.i]), 64)
	if err != nil {
		return 0, false
	}
	if f < 0 || f != f {
		return 0, true
	}
	return int(min(f, maxCount)), true
}

// lineReader splits a body into lines with a buffer that grows only up to the line
// cap, so a hostile endless line costs at most maxLine bytes before the read stops. It
// takes no timestamps: one read may deliver many events (the reader woke late, or the
// server wrote them together), so the client stamps each event as it parses it.
type lineReader struct {
	r       io.Reader
	buf     []byte
	start   int // first unread byte
	scan    int // bytes in [start, scan) hold no newline
	end     int // end of buffered data
	total   int64
	maxLine int
	maxBody int64
	err     error // sticky read error, returned once the buffer is drained
}

// initialLineBuf holds a few SSE events (a chunk is 100 to 500 bytes); the buffer
// doubles for a longer line, up to the line cap.
const initialLineBuf = 2 << 10

func (lr *lineReader) reset(r io.Reader, maxLine int, maxBody int64) {
	if cap(lr.buf) < initialLineBuf {
		lr.buf = make([]byte, initialLineBuf)
	}
	*lr = lineReader{r: r, buf: lr.buf[:cap(lr.buf)], maxLine: maxLine, maxBody: maxBody}
}

// next returns the next line without its terminator ("\n" or "\r\n"), valid until the
// following call. A final line without a newline is returned before io.EOF.
func (lr *lineReader) next() ([]byte, error) {
	for {
		if i := bytes.IndexByte(lr.buf[lr.scan:lr.end], '\n'); i >= 0 {
			nl := lr.scan + i
			line := lr.buf[lr.start:nl]
			lr.start, lr.scan = nl+1, nl+1
			if len(line) > lr.maxLine {
				return nil, errTooLarge
			}
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
			return line, nil
		}
		lr.scan = lr.end
		if lr.end-lr.start > lr.maxLine {
			return nil, errTooLarge
		}
		if lr.err != nil {
			// A last line without a newline counts only at a clean end; after a
			// broken connection it is a fragment.
			if lr.err == io.EOF && lr.start < lr.end {
				line := lr.buf[lr.start:lr.end]
				lr.start, lr.scan = lr.end, lr.end
				if n := len(line); line[n-1] == '\r' {
					line = line[:n-1]
				}
				return line, nil
			}
			return nil, lr.err
		}
		if lr.start == lr.end {
			lr.start, lr.scan, lr.end = 0, 0, 0
		}
		if lr.end == len(lr.buf) {
			if lr.start > 0 {
				n := copy(lr.buf, lr.buf[lr.start:lr.end])
				lr.scan -= lr.start
				lr.start, lr.end = 0, n
			} else {
				// The partial line fills the buffer but is within the cap (checked
				// above), so the buffer is smaller than maxLine+1: grow toward it.
				size := 2 * len(lr.buf)
				if size >= lr.maxLine {
					size = lr.maxLine + 1
				}
				nb := make([]byte, size)
				copy(nb, lr.buf[:lr.end])
				lr.buf = nb
			}
		}
		n, err := lr.r.Read(lr.buf[lr.end:])
		if n > 0 {
			lr.total += int64(n)
			if over := lr.total - lr.maxBody; over > 0 {
				// Keep the lines within the cap, then stop reading.
				n -= int(over)
				err = errTooLarge
			}
			lr.end += n
		}
		if err != nil {
			lr.err = err
		}
	}
}
