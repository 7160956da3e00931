package joblog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// jsonDecoder reads one flat JSON object per line. Blank lines are
// passed over. Values may be strings or numbers (a number stands for
// its literal text, so a duration may be given in seconds); null is the
// same as leaving the key out.
type jsonDecoder struct {
	in   *bufio.Reader
	line int
}

func (d *jsonDecoder) next(rec *record) (int, error) {
	for {
		text, err := d.readLine()
		if err != nil {
			return d.line, err
		}
		text = bytes.TrimSpace(text)
		if len(text) == 0 {
			continue
		}
		if fe := parseObject(text, rec); fe != nil {
			fe.Line = d.line
			return d.line, fe
		}
		return d.line, nil
	}
}

// readLine returns the next line without its newline; the slice is
// valid until the next call. A line longer than the buffer is passed
// over and reported, so memory stays bounded whatever the input.
func (d *jsonDecoder) readLine() ([]byte, error) {
	text, err := d.in.ReadSlice('\n')
	switch {
	case err == nil:
		d.line++
		return text, nil
	case err == io.EOF && len(text) > 0: // last line without a newline
		d.line++
		return text, nil
	case errors.Is(err, bufio.ErrBufferFull):
		d.line++
		for errors.Is(err, bufio.ErrBufferFull) {
			_, err = d.in.ReadSlice('\n')
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		return nil, &LineError{Line: d.line, Err: fmt.Errorf("longer than %d bytes", d.in.Size())}
	}
	return nil, err
}

// parseObject fills rec from one JSON object, checking its keys in the
// order they appear so that the first fault reported is the first one
// on the line. Its LineError has no line number yet.
//
// It scans the object itself rather than using encoding/json, which
// costs several times more per line in time and allocations; a log
// holds only flat objects of strings and numbers, and the fuzz test
// checks that every line accepted here is valid JSON.
func parseObject(text []byte, rec *record) *LineError {
	s := scanner{text: text}
	s.space()
	if !s.eat('{') {
		return &LineError{Err: errors.New("not a JSON object")}
	}
	s.space()
	if !s.eat('}') {
		for {
			s.space()
			if s.peek() != '"' {
				return s.syntax("a key in double quotes")
			}
			key, err := s.str()
			if err != nil {
				return err
			}
			f, known := lookupField(key)
			if !known {
				return &LineError{Field: key, Err: errors.New("unknown field")}
			}
			if rec.set[f] {
				return &LineError{Field: key, Err: errors.New("given twice")}
			}
			s.space()
			if !s.eat(':') {
				return s.syntax("':' after the key")
			}
			s.space()
			switch c := s.peek(); {
			case c == '"':
				v, err := s.str()
				if err != nil {
					return err
				}
				rec.text[f], rec.set[f] = v, true
			case c == '-' || '0' <= c && c <= '9':
				v, err := s.number()
				if err != nil {
					return err
				}
				rec.text[f], rec.set[f] = v, true
			case s.word("null"): // same as absent
			case c == '{' || c == '[' || c == 't' || c == 'f':
				return &LineError{Field: key, Err: errors.New("must be a string or a number")}
			default:
				return s.syntax("a value")
			}
			s.space()
			if s.eat(',') {
				continue
			}
			if s.eat('}') {
				break
			}
			return s.syntax("',' or '}'")
		}
	}
	s.space()
	if s.i < len(s.text) {
		return &LineError{Err: errors.New("text after the JSON object")}
	}
	return nil
}

// scanner reads the tokens of one line of JSON.
type scanner struct {
	text []byte
	i    int
}

func (s *scanner) peek() byte {
	if s.i < len(s.text) {
		return s.text[s.i]
	}
	return 0
}

func (s *scanner) eat(c byte) bool {
	if s.peek() == c {
		s.i++
		return true
	}
	return false
}

func (s *scanner) word(w string) bool {
	if bytes.HasPrefix(s.text[s.i:], []byte(w)) {
		s.i += len(w)
		return true
	}
	return false
}

func (s *scanner) space() {
	for s.i < len(s.text) {
		switch s.text[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) syntax(want string) *LineError {
	if s.i >= len(s.text) {
		return &LineError{Err: fmt.Errorf("malformed JSON: the line ends where %s should be", want)}
	}
	return &LineError{Err: fmt.Errorf("malformed JSON: %q at column %d where %s should be", s.text[s.i], s.i+1, want)}
}

// str reads a string token. A string with escapes or bytes that are not
// UTF-8 is decoded by encoding/json, which knows every rule; a plain one
// is copied as it is.
func (s *scanner) str() (string, *LineError) {
	start := s.i
	s.i++ // the opening quote
	plain := true
	for {
		if s.i >= len(s.text) {
			return "", s.syntax("the closing '\"' of a string")
		}
		c := s.text[s.i]
		switch {
		case c == '"':
			s.i++
			tok := s.text[start:s.i]
			if plain && utf8.Valid(tok) {
				return string(tok[1 : len(tok)-1]), nil
			}
			var v string
			if err := json.Unmarshal(tok, &v); err != nil {
				return "", &LineError{Err: fmt.Errorf("malformed JSON: string at column %d: %v", start+1, err)}
			}
			return v, nil
		case c == '\\':
			plain = false
			s.i += 2
		case c < 0x20:
			return "", s.syntax("a character other than a control character")
		default:
			s.i++
		}
	}
}

// number reads a number token and returns its text.
func (s *scanner) number() (string, *LineError) {
	start := s.i
	for s.i < len(s.text) && strings.IndexByte("+-0123456789.eE", s.text[s.i]) >= 0 {
		s.i++
	}
	tok := s.text[start:s.i]
	if !json.Valid(tok) {
		return "", &LineError{Err: fmt.Errorf("malformed JSON: %q at column %d is not a number", tok, start+1)}
	}
	return string(tok), nil
}
