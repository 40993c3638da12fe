package exporter

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slowlab/slowlab/cgroup"
)

// This file is the exporter's dynamic groups: a cgroup-re: selector makes
// one group per cgroup whose path matches, labelled with the regex's named
// captures, resolved again at every scrape (a cgroup that is gone is no
// longer reported: no stale series), and bounded by
// Options.MaxDynamicGroups, beyond which matches are summed into the group
// "other".

// DefaultMaxDynamicGroups bounds the groups cgroup-re: selectors make.
const DefaultMaxDynamicGroups = 200

// OtherGroup is the group that sums the dynamic matches over the bound.
const OtherGroup = "other"

// dynamic is a compiled cgroup-re: group.
type dynamic struct {
	re       *regexp.Regexp
	captures []string // the regex's named captures, in order
	template string   // GroupName; "" means the matched path
	skipComm []string // Group.SkipComm
}

// skipSandboxes leaves out the matches of groups with skip_comm whose
// cgroup holds processes and only processes of those names. A process
// that exits meanwhile is not counted; a cgroup whose processes cannot be
// read is kept (its group reports the error). It stops with ctx's error
// once the scrape's deadline has passed.
func skipSandboxes(ctx context.Context, l cgroup.Layout, procFS string, matches []dynMatch) ([]dynMatch, error) {
	kept := matches[:0]
	for _, m := range matches {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("cgroup-re: %w", err)
		}
		if !isSandbox(l, procFS, m) {
			kept = append(kept, m)
		}
	}
	return kept, nil
}

func isSandbox(l cgroup.Layout, procFS string, m dynMatch) bool {
	if len(m.g.dyn.skipComm) == 0 {
		return false
	}
	pids := map[int]bool{}
	if err := l.AddPids(m.path, pids); err != nil || len(pids) == 0 {
		return false
	}
	for pid := range pids {
		b, err := os.ReadFile(filepath.Join(procFS, strconv.Itoa(pid), "comm"))
		if err != nil {
			if isGone(err) {
				continue
			}
			return false
		}
		if !slices.Contains(m.g.dyn.skipComm, strings.TrimSuffix(string(b), "\n")) {
			return false
		}
	}
	return true
}

var (
	labelNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	templateRef = regexp.MustCompile(`\$(?:\{([^}]*)\}|([A-Za-z0-9_]+))`)

	dynamicGroups = prometheus.NewDesc("slowlab_exporter_dynamic_groups",
		"Groups the cgroup-re: selectors made at this scrape, up to --max-dynamic-groups.", nil, nil)
	dynamicDropped = prometheus.NewDesc("slowlab_exporter_dynamic_groups_dropped_total",
		"Label sets of cgroup-re: matches that went over --max-dynamic-groups and were summed into group=\"other\" since the exporter started, each counted once when it went over.", nil, nil)
	dynamicOther = prometheus.NewDesc("slowlab_exporter_dynamic_groups_other",
		"Matches of cgroup-re: selectors over --max-dynamic-groups (or with a label set already taken) at this scrape, summed into group=\"other\" instead of reported on their own.", nil, nil)
)

// compileDynamic checks a group's cgroup-re: selector and group_name and
// sets cg.dyn; a group without one must not have a group_name.
func compileDynamic(cg *group, g Group) error {
	i := slices.IndexFunc(cg.selectors, func(s selector) bool { return s.kind == "cgroup-re" })
	if i < 0 {
		if g.GroupName != "" {
			return fmt.Errorf("group_name %q: only for a group whose selector is cgroup-re:", g.GroupName)
		}
		return nil
	}
	raw := g.Selectors[i]
	if len(cg.selectors) > 1 {
		return fmt.Errorf("selector %q: a cgroup-re: selector must be its group's only selector (each match is a group of its own)", raw)
	}
	d := &dynamic{re: cg.selectors[i].re, template: g.GroupName}
	for _, name := range d.re.SubexpNames()[1:] {
		switch {
		case name == "":
		case !labelNameRE.MatchString(name) || strings.HasPrefix(name, "__"):
			return fmt.Errorf("selector %q: capture %q is not a valid label name (want [a-zA-Z_][a-zA-Z0-9_]*, not starting with __)", raw, name)
		case name == "group":
			return fmt.Errorf("selector %q: capture %q: the group label is set by group_name", raw, name)
		case slices.Contains(d.captures, name):
			return fmt.Errorf("selector %q: capture %q named twice", raw, name)
		default:
			d.captures = append(d.captures, name)
		}
	}
	if len(d.captures) == 0 {
		return fmt.Errorf("selector %q: no named capture such as (?P<unit>[^/]+): each match needs labels that tell it from the others", raw)
	}
	for _, m := range templateRef.FindAllStringSubmatch(d.template, -1) {
		if ref := m[1] + m[2]; !slices.Contains(d.captures, ref) {
			return fmt.Errorf("group_name %q: $%s is not a capture of %q (captures: %s)", d.template, ref, raw, strings.Join(d.captures, ", "))
		}
	}
	cg.cgroup, cg.dyn = "", d
	return nil
}

// checkDynamic refuses configs whose dynamic groups could give two groups
// the same label set: two cgroup-re: groups with the same captures and the
// same group_name, or a fixed group named "other".
func checkDynamic(groups []group) error {
	var dyn []group
	for _, g := range groups {
		if g.dyn != nil {
			dyn = append(dyn, g)
		}
	}
	if len(dyn) == 0 {
		return nil
	}
	for _, g := range groups {
		if g.dyn == nil && g.name == OtherGroup {
			return fmt.Errorf("group %q: the name is taken by the sum of the dynamic groups over --max-dynamic-groups", g.name)
		}
	}
	for i, a := range dyn {
		for _, b := range dyn[i+1:] {
			if a.dyn.template == b.dyn.template && slices.Equal(slices.Sorted(slices.Values(a.dyn.captures)), slices.Sorted(slices.Values(b.dyn.captures))) {
				return fmt.Errorf("groups %q and %q: their cgroup-re: selectors give the same label set (captures %s, group_name %q), so one cgroup could be reported twice: give them different captures or group_name",
					a.name, b.name, strings.Join(a.dyn.captures, ", "), a.dyn.template)
			}
		}
	}
	return nil
}

// dynMatch is one cgroup a dynamic group's regex matched.
type dynMatch struct {
	g      *group
	path   string
	labels prometheus.Labels
	name   string // the group label
}

// key is the match's label set, which must be unique among the targets.
func (m dynMatch) key() string {
	names := make([]string, 0, len(m.labels))
	for k := range m.labels {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString(m.name)
	for _, k := range names {
		fmt.Fprintf(&b, "\xff%s=%s", k, m.labels[k])
	}
	return b.String()
}

// dynStats is what the last resolve made of the dynamic groups.
type dynStats struct {
	groups, other int
	// own are the label sets that got series of their own; over those
	// summed into OtherGroup for the cap (by label set, their group
	// names). newly are the names of those over the cap that were not at
	// the last scrape, and dropped counts such label sets since the
	// exporter started (slowlab_exporter_dynamic_groups_dropped_total).
	own     map[string]bool
	over    map[string]string
	newly   []string
	dropped float64
}

// dynSlots is what the cap on the dynamic groups keeps from one scrape to
// the next: a label set that has series of its own keeps them while its
// cgroup matches, whatever sorts before it, so a new cgroup over the cap
// goes to "other" instead of pushing an old one there (which would make
// "other"'s counters jump and its own series vanish).
type dynSlots struct {
	mu      sync.Mutex
	own     map[string]bool
	over    map[string]string
	dropped float64
}

// assign runs dynamicTargets with the slots of the last scrape and keeps
// this one's; nil slots (a resolver used once) keep nothing.
func (s *dynSlots) assign(ctx context.Context, l cgroup.Layout, matches []dynMatch, max int, taken map[string]bool) ([]Target, dynStats) {
	if s == nil {
		return dynamicTargets(ctx, l, matches, max, taken, nil)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out, st := dynamicTargets(ctx, l, matches, max, taken, s.own)
	for key, name := range st.over {
		if _, was := s.over[key]; !was {
			st.newly = append(st.newly, name)
			s.dropped++
		}
	}
	sort.Strings(st.newly)
	s.own, s.over = st.own, st.over
	st.dropped = s.dropped
	return out, st
}

// walkRoot is the hierarchy the dynamic groups' paths are matched in: the
// v1 memory (else cpu) hierarchy, else the v2 tree. kubelet and systemd
// create every cgroup in each hierarchy, under the same path.
func walkRoot(l cgroup.Layout) string {
	for _, ctrl := range []string{"memory", "cpu"} {
		if d, ok := l.V1[ctrl]; ok {
			return d
		}
	}
	return l.Unified
}

// matchDynamic walks the cgroup tree once and returns every match of the
// dynamic groups, by group in config order, then by path.
func matchDynamic(ctx context.Context, l cgroup.Layout, groups []group) ([]dynMatch, error) {
	root := walkRoot(l)
	var out []dynMatch
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walking
			}
			return err
		}
		if !d.IsDir() || p == root {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, root+string(filepath.Separator)))
		for i := range groups {
			g := &groups[i]
			if g.dyn == nil {
				continue
			}
			if sub := g.dyn.re.FindStringSubmatchIndex(rel); sub != nil {
				out = append(out, newMatch(g, rel, sub))
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cgroup-re: walk %s: %w", root, err)
	}
	order := map[*group]int{}
	for i := range groups {
		order[&groups[i]] = i
	}
	sort.SliceStable(out, func(i, j int) bool {
		if order[out[i].g] != order[out[j].g] {
			return order[out[i].g] < order[out[j].g]
		}
		return out[i].path < out[j].path
	})
	return out, nil
}

func newMatch(g *group, rel string, sub []int) dynMatch {
	m := dynMatch{g: g, path: rel, labels: prometheus.Labels{}, name: rel}
	for i, name := range g.dyn.re.SubexpNames() {
		if name != "" && sub[2*i] >= 0 {
			m.labels[name] = rel[sub[2*i]:sub[2*i+1]]
		} else if name != "" {
			m.labels[name] = ""
		}
	}
	if g.dyn.template != "" {
		m.name = string(g.dyn.re.ExpandString(nil, g.dyn.template, rel, sub))
	}
	return m
}

// dynamicTargets turns the matches into targets: up to max with a label
// set of their own each a group, first those in kept (which had their own
// series at the last scrape), then the others in order; the rest summed
// into OtherGroup. Once ctx's deadline has passed, the targets not yet
// read get no processes and the deadline as their error.
func dynamicTargets(ctx context.Context, l cgroup.Layout, matches []dynMatch, max int, taken map[string]bool, kept map[string]bool) ([]Target, dynStats) {
	var (
		out   []Target
		other = Target{Group: OtherGroup}
		pids  = map[int]bool{}
		errs  partialErrors
		st    = dynStats{own: map[string]bool{}, over: map[string]string{}}
		slot  = make([]bool, len(matches))
	)
	give := func(i int, key string) {
		slot[i], taken[key], st.own[key] = true, true, true
		st.groups++
	}
	for i, m := range matches {
		if key := m.key(); kept[key] && !taken[key] && st.groups < max {
			give(i, key)
		}
	}
	for i, m := range matches {
		key := m.key()
		switch {
		case slot[i] || taken[key]:
		case st.groups < max:
			give(i, key)
		default:
			st.over[key] = m.name
		}
	}
	for i, m := range matches {
		late := ctx.Err()
		if slot[i] {
			t := Target{Group: m.name, Cgroup: m.path, Labels: m.labels, TempDirs: m.g.tempDirs, descs: &descCache{}}
			own := map[int]bool{}
			if late != nil {
				t.Err = fmt.Errorf("group %s: select processes: %w", m.name, late)
			} else if err := l.AddPids(m.path, own); err != nil && !isGone(err) {
				t.Err = fmt.Errorf("group %s: select processes: cgroup:%s: %w", m.name, m.path, err)
			}
			t.PIDs = sortedPids(own)
			out = append(out, t)
			continue
		}
		st.other++
		other.Cgroups = append(other.Cgroups, m.path)
		other.TempDirs = m.g.tempDirs
		if late != nil {
			errs.add(late)
		} else if err := l.AddPids(m.path, pids); err != nil && !isGone(err) {
			errs.add(fmt.Errorf("cgroup:%s: %w", m.path, err))
		}
	}
	if st.other > 0 {
		other.PIDs = sortedPids(pids)
		if err := errs.err(); err != nil {
			other.Err = fmt.Errorf("group %s: select processes: %w", OtherGroup, err)
		}
		out = append(out, other)
	}
	return out, st
}

func sortedPids(set map[int]bool) []int {
	out := make([]int, 0, len(set))
	for pid := range set {
		out = append(out, pid)
	}
	sort.Ints(out)
	return out
}
