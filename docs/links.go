package docs

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// Link is one Markdown link [text](target) found in a file.
type Link struct {
	// Line is the 1-based line the link is on.
	Line int
	// Target is what the parentheses hold: a path, a #fragment, or both.
	Target string
}

var (
	// linkRE matches an inline link or image: [text](target), where text
	// may itself hold one level of brackets ([`x`](y), [![img](a)](b)).
	linkRE = regexp.MustCompile(`\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// codeSpanRE matches an inline code span, whose text is not Markdown.
	codeSpanRE = regexp.MustCompile("`+[^`]*`+")
	// headingRE matches an ATX heading: its text is group 2.
	headingRE = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	// fenceRE matches the line that opens or closes a fenced code block.
	fenceRE = regexp.MustCompile("^\\s{0,3}(```|~~~)")
)

// Scan returns the links and the heading anchors of a Markdown document,
// leaving out what fenced code blocks and code spans hold.
func Scan(text string) (links []Link, anchors map[string]bool) {
	anchors = map[string]bool{}
	seen := map[string]int{}
	fence := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if m := fenceRE.FindStringSubmatch(line); m != nil {
			switch {
			case fence == "":
				fence = m[1]
				continue
			case fence == m[1]:
				fence = ""
				continue
			}
		}
		if fence != "" {
			continue
		}
		if m := headingRE.FindStringSubmatch(line); m != nil {
			a := Slug(m[2])
			if k := seen[a]; k > 0 {
				anchors[fmt.Sprintf("%s-%d", a, k)] = true
			} else {
				anchors[a] = true
			}
			seen[a]++
		}
		for _, m := range linkRE.FindAllStringSubmatch(codeSpanRE.ReplaceAllString(line, ""), -1) {
			links = append(links, Link{Line: n, Target: m[1]})
		}
	}
	return links, anchors
}

// Slug is the anchor GitHub gives a heading: the heading's text (a link's
// text, without code backticks and emphasis), lower-cased, with every
// character but letters, digits, '-', '_' and spaces dropped and each space
// turned into '-'.
func Slug(heading string) string {
	heading = linkRE.ReplaceAllStringFunc(heading, func(s string) string {
		return s[1:strings.LastIndex(s, "](")]
	})
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// External reports whether a link target leaves the repository (it has a
// scheme, such as https: or mailto:).
func External(target string) bool {
	return regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`).MatchString(target)
}

// Check returns one error per relative link of the Markdown file at path
// that does not resolve: its file does not exist, or its #fragment is no
// heading of the Markdown file it names.
func Check(path string) ([]error, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	links, own := Scan(string(b))
	var bad []error
	for _, l := range links {
		if External(l.Target) {
			continue
		}
		file, frag, _ := strings.Cut(l.Target, "#")
		anchors := own
		if file != "" {
			target := filepath.Join(filepath.Dir(path), filepath.FromSlash(file))
			st, err := os.Stat(target)
			if err != nil {
				bad = append(bad, fmt.Errorf("%s:%d: link %q: %w", path, l.Line, l.Target, err))
				continue
			}
			if frag == "" {
				continue
			}
			if st.IsDir() || !strings.HasSuffix(target, ".md") {
				bad = append(bad, fmt.Errorf("%s:%d: link %q: a #fragment needs a Markdown file", path, l.Line, l.Target))
				continue
			}
			tb, err := os.ReadFile(target)
			if err != nil {
				return nil, err
			}
			_, anchors = Scan(string(tb))
		}
		if frag != "" && !anchors[frag] {
			bad = append(bad, fmt.Errorf("%s:%d: link %q: no heading with anchor #%s", path, l.Line, l.Target, frag))
		}
	}
	return bad, nil
}
