package compattests

import (
	"encoding/xml"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Tally counts the outcomes of one area (or of all).
type Tally struct {
	Area       string `json:"area"`
	Scenarios  int    `json:"scenarios"`
	Equal      int    `json:"equal"`
	Documented int    `json:"documented"`
	Differs    int    `json:"differs"`
	Failed     int    `json:"failed"`
	Skipped    int    `json:"skipped"`
}

func (t *Tally) add(r Result) {
	t.Scenarios++
	switch r.Status {
	case Equal:
		t.Equal++
	case Documented:
		t.Documented++
	case Differs:
		t.Differs++
	case Failed:
		t.Failed++
	case Skipped:
		t.Skipped++
	}
}

// Tallies counts results per area (sorted by area) and in total.
func Tallies(results []Result) (areas []Tally, total Tally) {
	by := map[string]*Tally{}
	for _, r := range results {
		t := by[r.Area]
		if t == nil {
			t = &Tally{Area: r.Area}
			by[r.Area] = t
		}
		t.add(r)
		total.add(r)
	}
	total.Area = "total"
	for _, t := range by {
		areas = append(areas, *t)
	}
	sort.Slice(areas, func(i, j int) bool { return areas[i].Area < areas[j].Area })
	return areas, total
}

// AllEqual reports whether every result is Equal (skipped ones aside).
func AllEqual(results []Result) bool {
	for _, r := range results {
		if r.Status != Equal && r.Status != Skipped {
			return false
		}
	}
	return true
}

// WriteTable prints the tally per area and the total.
func WriteTable(w io.Writer, results []Result) {
	areas, total := Tallies(results)
	row := func(t Tally) {
		fmt.Fprintf(w, "%-12s %9d %6d %10d %7d %6d %7d\n", t.Area, t.Scenarios, t.Equal, t.Documented, t.Differs, t.Failed, t.Skipped)
	}
	fmt.Fprintf(w, "%-12s %9s %6s %10s %7s %6s %7s\n", "area", "scenarios", "equal", "documented", "differs", "failed", "skipped")
	for _, t := range areas {
		row(t)
	}
	row(total)
}

// WriteSkips prints the skipped scenarios grouped by reason: the reason's
// general part heads a group, a detail that varies within it ("not
// whitelisted: stat") follows each scenario.
func WriteSkips(w io.Writer, results []Result) {
	type skip struct{ id, detail string }
	var heads []string
	by := map[string][]skip{}
	for _, r := range results {
		if r.Status != Skipped {
			continue
		}
		head, detail, _ := strings.Cut(r.Reason, " (")
		if detail != "" {
			detail = "(" + detail
		}
		if by[head] == nil {
			heads = append(heads, head)
		}
		by[head] = append(by[head], skip{r.ID, detail})
	}
	for _, head := range heads {
		group := by[head]
		same := true
		for _, sk := range group {
			same = same && sk.detail == group[0].detail
		}
		if same && group[0].detail != "" {
			fmt.Fprintf(w, "skipped, %s %s:\n", head, group[0].detail)
		} else {
			fmt.Fprintf(w, "skipped, %s:\n", head)
		}
		for _, sk := range group {
			if same || sk.detail == "" {
				fmt.Fprintf(w, "  %s\n", sk.id)
			} else {
				fmt.Fprintf(w, "  %s %s\n", sk.id, sk.detail)
			}
		}
	}
}

// WriteDifferences prints, for every scenario that is not equal, its
// outcome and the first steps where the two transcripts part.
func WriteDifferences(w io.Writer, results []Result, refName, candName string, steps int) {
	for _, r := range results {
		switch r.Status {
		case Equal, Skipped:
			continue
		}
		fmt.Fprintf(w, "\n%s %s", strings.ToUpper(string(r.Status)), r.ID)
		if r.First >= 0 {
			fmt.Fprintf(w, " (first difference at step %d of %d/%d)", r.First+1, len(r.Reference), len(r.Candidate))
		}
		fmt.Fprintln(w)
		if r.Reason != "" {
			fmt.Fprintf(w, "  %s\n", r.Reason)
		}
		if r.First >= 0 {
			fmt.Fprint(w, Diff(r.Reference, r.Candidate, refName, candName, steps))
		}
	}
}

// junit is the JUnit XML CI servers read: a suite per area, a test case
// per scenario.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Name    string       `xml:"name,attr"`
	Tests   int          `xml:"tests,attr"`
	Fail    int          `xml:"failures,attr"`
	Errors  int          `xml:"errors,attr"`
	Skipped int          `xml:"skipped,attr"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name    string      `xml:"name,attr"`
	Tests   int         `xml:"tests,attr"`
	Fail    int         `xml:"failures,attr"`
	Errors  int         `xml:"errors,attr"`
	Skipped int         `xml:"skipped,attr"`
	Time    float64     `xml:"time,attr"`
	Cases   []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      float64       `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes results as JUnit XML: a difference is a failure (a
// documented one too, when documentedFails), a harness failure an error,
// a skip skipped.
func WriteJUnit(w io.Writer, results []Result, refName, candName string, documentedFails bool) error {
	top := junitSuites{Name: "zkbridge compat"}
	index := map[string]int{}
	for _, r := range results {
		i, ok := index[r.Area]
		if !ok {
			i = len(top.Suites)
			index[r.Area] = i
			top.Suites = append(top.Suites, junitSuite{Name: r.Area})
		}
		s := &top.Suites[i]
		c := junitCase{Name: r.Name, Classname: "compat." + r.Area, Time: r.Seconds}
		switch {
		case r.Status == Differs || r.Status == Documented && documentedFails:
			msg := "transcripts differ"
			if r.Status == Documented {
				msg = "documented difference: " + r.Reason
			} else if r.Reason != "" {
				msg += ": " + r.Reason
			}
			c.Failure = &junitMessage{Message: msg, Type: string(r.Status), Text: Diff(r.Reference, r.Candidate, refName, candName, 0)}
			s.Fail++
			top.Fail++
		case r.Status == Failed:
			c.Error = &junitMessage{Message: r.Reason, Type: "failed"}
			s.Errors++
			top.Errors++
		case r.Status == Skipped:
			c.Skipped = &junitMessage{Message: r.Reason}
			s.Skipped++
			top.Skipped++
		}
		s.Tests++
		s.Time += r.Seconds
		top.Tests++
		s.Cases = append(s.Cases, c)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(top); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
