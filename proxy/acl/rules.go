package acl

import (
	"regexp"
	"slices"
	"sync"
)

// Rules are a parsed rules file: the rules, indexed by the principal names they match. A
// subject's View holds just the rules that apply to it.
type Rules struct {
	used  [numTypes]bool
	rules []rule
	// users: rules by exact user name; prefixes: by user name prefix (prefixLens their
	// lengths, ascending); anyUser: rules for every user.
	users      map[string][]int32
	prefixes   map[string][]int32
	prefixLens []int
	anyUser    []int32

	mu    sync.Mutex
	views map[string]*View
}

// maxViews bounds the views a Rules keeps: past that many subjects it starts over.
const maxViews = 4096

func newRules() *Rules {
	return &Rules{users: map[string][]int32{}, prefixes: map[string][]int32{}, views: map[string]*View{}}
}

// add adds a rule for the users m matches.
func (r *Rules) add(m nameMatch, ru rule) {
	i := int32(len(r.rules))
	r.rules = append(r.rules, ru)
	r.used[ru.typ] = true
	switch m.kind {
	case mAny:
		r.anyUser = append(r.anyUser, i)
	case mExact:
		for _, n := range m.names {
			r.users[n] = append(r.users[n], i)
		}
	case mPrefix:
		r.prefixes[m.names[0]] = append(r.prefixes[m.names[0]], i)
	}
}

// index finishes the principal index once every rule is in.
func (r *Rules) index() {
	seen := map[int]bool{}
	for p := range r.prefixes {
		if !seen[len(p)] {
			seen[len(p)] = true
			r.prefixLens = append(r.prefixLens, len(p))
		}
	}
	slices.Sort(r.prefixLens)
}

// Len is the number of rules (a rule with an `in` set of users counts once).
func (r *Rules) Len() int { return len(r.rules) }

// Uses reports whether some rule is about resources of type t: a type no rule names is not
// checked.
func (r *Rules) Uses(t Type) bool { return r.used[t] }

// View is the rules that apply to one subject, indexed by resource name for the data path. It
// is immutable, and shared by the connections of the subject.
type View struct {
	used  [numTypes]bool
	sides [2][numTypes]resourceIndex // deny, allow
}

// resourceIndex finds the operations that rules of one side and type grant (or deny) a name.
type resourceIndex struct {
	any      Ops
	exact    map[string]Ops
	prefixes map[string]Ops
	lens     []int // the lengths of prefixes, ascending
	regexes  []regexOps
}

type regexOps struct {
	re  *regexp.Regexp
	ops Ops
}

// For is the view of the subject whose User principal is user; "" is the anonymous subject,
// which no rule matches.
func (r *Rules) For(user string) *View {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v, ok := r.views[user]; ok {
		return v
	}
	v := r.build(user)
	if len(r.views) >= maxViews {
		clear(r.views)
	}
	r.views[user] = v
	return v
}

// build makes the view of user from the rules whose principal matches it.
func (r *Rules) build(user string) *View {
	v := &View{used: r.used}
	if user == "" {
		return v
	}
	add := func(idx []int32) {
		for _, i := range idx {
			v.add(&r.rules[i])
		}
	}
	add(r.anyUser)
	add(r.users[user])
	for _, l := range r.prefixLens {
		if l > len(user) {
			break
		}
		add(r.prefixes[user[:l]])
	}
	for s := range v.sides {
		for t := range v.sides[s] {
			slices.Sort(v.sides[s][t].lens)
			v.sides[s][t].lens = slices.Compact(v.sides[s][t].lens)
		}
	}
	return v
}

func (v *View) add(ru *rule) {
	side := 1
	if ru.deny {
		side = 0
	}
	ix := &v.sides[side][ru.typ]
	switch ru.res.kind {
	case mAny:
		ix.any |= ru.ops
	case mExact:
		if ix.exact == nil {
			ix.exact = map[string]Ops{}
		}
		for _, n := range ru.res.names {
			ix.exact[n] |= ru.ops
		}
	case mPrefix:
		if ix.prefixes == nil {
			ix.prefixes = map[string]Ops{}
		}
		p := ru.res.names[0]
		ix.prefixes[p] |= ru.ops
		ix.lens = append(ix.lens, len(p))
	case mRegex:
		ix.regexes = append(ix.regexes, regexOps{ru.res.re, ru.ops})
	}
}

// match is every operation the index's rules name for a resource called name.
func (ix *resourceIndex) match(name string, all Ops) Ops {
	ops := ix.any | ix.exact[name]
	for _, l := range ix.lens {
		if ops == all || l > len(name) {
			break
		}
		ops |= ix.prefixes[name[:l]]
	}
	for _, r := range ix.regexes {
		if ops == all {
			break
		}
		if r.ops&^ops != 0 && r.re.MatchString(name) {
			ops |= r.ops
		}
	}
	return ops
}

// Allowed is every operation the subject may do on the resource of type t called name: those
// an allow rule grants and no deny rule denies. Every operation, when no rule is about type t.
func (v *View) Allowed(t Type, name string) Ops {
	all := typeOps[t]
	if !v.used[t] {
		return all
	}
	denied := v.sides[0][t].match(name, all)
	if denied == all {
		return 0
	}
	return v.sides[1][t].match(name, all) &^ denied
}

// Allows reports whether the subject may do op on the resource of type t called name.
func (v *View) Allows(t Type, name string, op Op) bool { return v.Allowed(t, name).Has(op) }

// Checks reports whether resources of type t are checked (some rule is about them).
func (v *View) Checks(t Type) bool { return v.used[t] }

// MayEver reports whether some allow rule grants the subject op on some resource of type t
// (deny rules aside): Kafka lets an idempotent producer in with WRITE on any topic.
func (v *View) MayEver(t Type, op Op) bool {
	if !v.used[t] {
		return true
	}
	ix := &v.sides[1][t]
	if ix.any.Has(op) {
		return true
	}
	for _, ops := range ix.exact {
		if ops.Has(op) {
			return true
		}
	}
	for _, ops := range ix.prefixes {
		if ops.Has(op) {
			return true
		}
	}
	for _, r := range ix.regexes {
		if r.ops.Has(op) {
			return true
		}
	}
	return false
}
