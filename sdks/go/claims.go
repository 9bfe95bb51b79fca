package licensor

import (
	"strconv"
	"strings"
)

// Claims are a licence's signed payload (DESIGN.md 2): the issuer claims, then the product's
// parameters in declared order. Optional claims are nil (or "") when the payload omits them.
type Claims struct {
	// V is 3, 4 when Fp lists several fingerprints, or 5 for a floating licence (Lse set).
	V   int
	Lid string
	// Prd is the product key, Org the organisation's slug.
	Prd string
	Org string
	// Typ is OFFLINE, ONLINE or HYBRID ("" when absent); Act is ONLINE or OFFLINE for HYBRID.
	Typ string
	Act string
	// Lic is the licensee's name.
	Lic *string
	// Iat, Nbf and Exp are Unix seconds; Nbf only when the term starts later, Exp nil when perpetual.
	Iat int64
	Nbf *int64
	Exp *int64
	// Grace is in days: the term works until Exp + Grace × 86,400 s.
	Grace int64
	// Fp are the fingerprints signed in (one or several); Fpn how many components must match.
	Fp  []string
	Fpn *int64
	// Mm is maxMachines; Chk and Max are checkEverySeconds and checkMaxSeconds (ONLINE and HYBRID).
	Mm  int64
	Chk *int64
	Max *int64
	// Lse (leaseSeconds) and Brw (maxBorrowSeconds, nil when borrowing is off) are a floating
	// licence's (V 5, DESIGN.md 13); in other payloads those names are product parameters.
	Lse *int64
	Brw *int64
	// Upd is the end of the update window (DESIGN.md 20), Unix seconds, nil without one; a
	// product's parameter that kept the name upd and is not a whole number of seconds stays in Params.
	Upd *int64
	// Mtr is the signed meters claim as read (DESIGN.md 19: a non-empty list of objects), nil
	// without one; a product's parameter that kept the name mtr is not one and stays in Params.
	Mtr []any
	// Trl: the licence is a trial (its trl claim is the boolean true, DESIGN.md 18); a trl of any
	// other value is a product parameter.
	Trl bool
	// Params are the product's parameters in payload order.
	Params []Param
}

// Param is one product parameter. Value is a string (STRING, ENUM, DATE), an int64 (INTEGER), a
// bool (BOOLEAN) or a []string (STRING_LIST); any other JSON the payload holds is kept as read.
type Param struct {
	Name  string
	Value any
}

// Trial reports whether the licence is a trial: its trl claim is the boolean true (DESIGN.md 18).
// For a product whose parameter kept the name trl, it means nothing.
func (c *Claims) Trial() bool {
	return c.Trl && c.Exp != nil
}

// Param returns the value of the named product parameter.
func (c *Claims) Param(name string) (any, bool) {
	for _, p := range c.Params {
		if p.Name == name {
			return p.Value, true
		}
	}
	return nil, false
}

var issuerClaims = map[string]bool{
	"v": true, "lid": true, "prd": true, "org": true, "typ": true, "act": true, "lic": true, "iat": true, "nbf": true,
	"exp": true, "grace": true, "fp": true, "fpn": true, "mm": true, "chk": true, "max": true,
}

// floatingClaims are issuer claims in v 5 payloads only.
var floatingClaims = map[string]bool{"lse": true, "brw": true}

// Bounds of lse and brw (DESIGN.md 13).
const (
	minLeaseSeconds  = 60
	maxLeaseSeconds  = 3600
	maxBorrowSeconds = 2592000
)

// parseClaims checks every issuer claim's presence and type as the service's parser does; the
// first problem is returned as a message.
func parseClaims(object *jsonObject) (*Claims, string) {
	c := &Claims{}
	get := func(name string) (any, bool) { return object.get(name) }
	integer := func(name string, min int64, required bool) (*int64, string) {
		value, present := get(name)
		if !present {
			if required {
				return nil, "claim \"" + name + "\" must be an integer"
			}
			return nil, ""
		}
		if n, ok := value.(jsonNumber); ok {
			if i, ok := n.integer(); ok && i >= min {
				return &i, ""
			}
		}
		if min == 0 {
			return nil, "claim \"" + name + "\" must be an integer of at least 0"
		}
		return nil, "claim \"" + name + "\" must be an integer"
	}
	text := func(name string) (string, string) {
		value, _ := get(name)
		if s, ok := value.(string); ok && s != "" {
			return s, ""
		}
		return "", "claim \"" + name + "\" must be a non-empty string"
	}
	oneOf := func(name string, allowed ...string) (string, string) {
		value, present := get(name)
		if !present {
			return "", ""
		}
		for _, a := range allowed {
			if value == a {
				return a, ""
			}
		}
		return "", "claim \"" + name + "\" must be " + strings.Join(allowed, " or ")
	}

	var problem string
	v, _ := get("v")
	if n, ok := v.(jsonNumber); ok {
		if i, ok := n.integer(); ok && i >= 3 && i <= 5 {
			c.V = int(i)
		}
	}
	if c.V == 0 {
		return nil, "claim \"v\" must be 3, 4 or 5"
	}
	if c.Lid, problem = text("lid"); problem != "" {
		return nil, problem
	}
	if c.Prd, problem = text("prd"); problem != "" {
		return nil, problem
	}
	if c.Org, problem = text("org"); problem != "" {
		return nil, problem
	}
	if c.Typ, problem = oneOf("typ", "OFFLINE", "ONLINE", "HYBRID"); problem != "" {
		return nil, problem
	}
	if c.Act, problem = oneOf("act", "ONLINE", "OFFLINE"); problem != "" {
		return nil, problem
	}
	if value, present := get("lic"); present {
		s, ok := value.(string)
		if !ok {
			return nil, "claim \"lic\" must be a string"
		}
		c.Lic = &s
	}
	var iat, grace, mm *int64
	if iat, problem = integer("iat", -maxSafeInteger, true); problem != "" {
		return nil, problem
	}
	if c.Nbf, problem = integer("nbf", -maxSafeInteger, false); problem != "" {
		return nil, problem
	}
	if c.Exp, problem = integer("exp", -maxSafeInteger, false); problem != "" {
		return nil, problem
	}
	if grace, problem = integer("grace", 0, true); problem != "" {
		return nil, problem
	}
	fpList := false
	if value, present := get("fp"); present {
		switch fp := value.(type) {
		case string:
			if fp != "" {
				c.Fp = []string{fp}
			}
		case []any:
			fpList = true
			for _, item := range fp {
				if s, ok := item.(string); ok && s != "" {
					c.Fp = append(c.Fp, s)
				} else {
					c.Fp = nil
					break
				}
			}
			if len(c.Fp) != len(fp) || len(fp) < 2 {
				c.Fp = nil
			}
		}
		if c.Fp == nil {
			return nil, "claim \"fp\" must be a fingerprint or a list of several fingerprints"
		}
	}
	// A verifier that predates multi-machine binding must refuse a list, hence the version.
	if c.V != 5 && (c.V == 4) != fpList {
		return nil, "claim \"v\" must be 4 exactly when \"fp\" is a list"
	}
	if c.Fpn, problem = integer("fpn", 1, false); problem != "" || (c.Fpn != nil && *c.Fpn > 5) {
		return nil, "claim \"fpn\" must be an integer from 1 to 5"
	}
	if mm, problem = integer("mm", 1, true); problem != "" {
		return nil, "claim \"mm\" must be an integer of at least 1"
	}
	if c.Chk, problem = integer("chk", 0, false); problem != "" {
		return nil, problem
	}
	if c.Max, problem = integer("max", 0, false); problem != "" {
		return nil, problem
	}
	c.Iat, c.Grace, c.Mm = *iat, *grace, *mm
	if c.V == 5 {
		if problem = c.parseFloating(integer); problem != "" {
			return nil, problem
		}
	}

	for _, m := range object.members {
		if trial, _ := m.value.(bool); m.key == "trl" && trial {
			c.Trl = true // a trial's claim, not a parameter (as the TypeScript SDK's params)
			continue
		}
		if m.key == "upd" && c.Upd == nil {
			if n, ok := m.value.(jsonNumber); ok {
				if i, ok := n.integer(); ok && i >= 0 {
					c.Upd = &i // the update window's claim, not a parameter
					continue
				}
			}
		}
		if m.key == "mtr" && isMeterClaim(m.value) {
			c.Mtr = m.value.([]any)
		} else if !issuerClaims[m.key] && !(c.V == 5 && floatingClaims[m.key]) {
			c.Params = append(c.Params, Param{Name: m.key, Value: paramValue(m.value)})
		}
	}
	return c, ""
}

// isMeterClaim: mtr is the meters claim exactly when it is a non-empty list of objects (a
// parameter's value never is one), as the TypeScript protocol's isMeterClaim says.
func isMeterClaim(value any) bool {
	list, ok := value.([]any)
	if !ok || len(list) == 0 {
		return false
	}
	for _, item := range list {
		if _, ok := item.(*jsonObject); !ok {
			return false
		}
	}
	return true
}

// parseFloating reads a floating licence's claims: ONLINE, no at-issue fingerprints, a lease
// length, maybe a borrow limit.
func (c *Claims) parseFloating(integer func(name string, min int64, required bool) (*int64, string)) string {
	var problem string
	if c.Lse, problem = integer("lse", minLeaseSeconds, true); problem != "" || *c.Lse > maxLeaseSeconds {
		return "claim \"lse\" must be an integer from 60 to 3600 when \"v\" is 5"
	}
	if c.Brw, problem = integer("brw", 1, false); problem != "" || (c.Brw != nil && *c.Brw > maxBorrowSeconds) {
		return "claim \"brw\" must be an integer from 1 to 2592000"
	}
	if c.Typ != "ONLINE" {
		return "claim \"typ\" must be ONLINE when \"v\" is 5"
	}
	if c.Fp != nil {
		return "claim \"fp\" is not allowed when \"v\" is 5"
	}
	return ""
}

// paramValue gives a parameter the Go type of its claim type.
func paramValue(value any) any {
	switch v := value.(type) {
	case jsonNumber:
		i, _ := v.integer() // the payload check already refused every other number
		return i
	case []any:
		list := make([]string, 0, len(v))
		for _, item := range v {
			s, ok := item.(string)
			if !ok {
				return v
			}
			list = append(list, s)
		}
		return list
	}
	return value
}

// allIntegers reports whether every number anywhere in a value is an integer literal in the safe
// range: a licence's payload holds no other number (DESIGN.md 16).
func allIntegers(value any) bool {
	switch v := value.(type) {
	case jsonNumber:
		_, ok := v.integer()
		return ok
	case []any:
		for _, item := range v {
			if !allIntegers(item) {
				return false
			}
		}
	case *jsonObject:
		for _, m := range v.members {
			if !allIntegers(m.value) {
				return false
			}
		}
	}
	return true
}

// MarshalJSON writes the claims in wire order, exactly as the service writes a payload.
func (c *Claims) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	member := func(name string) {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		quoteJSON(&b, name)
		b.WriteByte(':')
	}
	text := func(name, value string) {
		if value != "" {
			member(name)
			quoteJSON(&b, value)
		}
	}
	integer := func(name string, value *int64) {
		if value != nil {
			member(name)
			b.WriteString(strconv.FormatInt(*value, 10))
		}
	}
	b.WriteByte('{')
	member("v")
	b.WriteString(strconv.Itoa(c.V))
	text("lid", c.Lid)
	text("prd", c.Prd)
	text("org", c.Org)
	text("typ", c.Typ)
	text("act", c.Act)
	if c.Lic != nil {
		member("lic")
		quoteJSON(&b, *c.Lic)
	}
	integer("iat", &c.Iat)
	integer("nbf", c.Nbf)
	integer("exp", c.Exp)
	integer("grace", &c.Grace)
	switch {
	case c.V == 4:
		member("fp")
		writeJSON(&b, stringsToAny(c.Fp))
	case len(c.Fp) == 1:
		text("fp", c.Fp[0])
	}
	integer("fpn", c.Fpn)
	integer("mm", &c.Mm)
	integer("chk", c.Chk)
	integer("max", c.Max)
	if c.V == 5 {
		integer("lse", c.Lse)
		integer("brw", c.Brw)
	}
	integer("upd", c.Upd)
	if c.Mtr != nil {
		member("mtr")
		writeJSON(&b, c.Mtr)
	}
	if c.Trl {
		member("trl")
		b.WriteString("true")
	}
	for _, p := range c.Params {
		member(p.Name)
		writeJSON(&b, anyToJSON(p.Value))
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

func stringsToAny(list []string) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = s
	}
	return out
}

// anyToJSON turns a parameter's Go value back into the parser's form.
func anyToJSON(value any) any {
	switch v := value.(type) {
	case int64:
		return jsonNumber(strconv.FormatInt(v, 10))
	case []string:
		return stringsToAny(v)
	}
	return value
}
