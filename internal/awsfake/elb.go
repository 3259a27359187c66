package awsfake

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
)

// The Elastic Load Balancing v2 part of the fake speaks the query protocol (XML answers) for
// the listeners and listener rules blue-green deployments swap and traffic shifts weigh: each
// forwards to one target group, or a rule to several with weights (a ForwardConfig), and
// ModifyRule and ModifyListener change that; AddTags and DescribeTags keep tags on them.

// AddListener makes a listener forwarding to targetGroup, with one rule (ruleArn, "" for none)
// forwarding to the same group.
func (s *Server) AddListener(listenerArn, ruleArn, targetGroup string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listeners[listenerArn] = targetGroup
	if ruleArn != "" {
		s.rules[ruleArn] = targetGroup
		delete(s.weights, ruleArn)
	}
}

// SetWeights makes a rule forward to target groups by weight.
func (s *Server) SetWeights(ruleArn string, weights map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, best := map[string]int{}, -1
	for tg, n := range weights {
		w[tg] = n
		if n > best || (n == best && tg < s.rules[ruleArn]) {
			s.rules[ruleArn], best = tg, n
		}
	}
	s.weights[ruleArn] = w
}

// Weights returns the weight of each target group a rule forwards to (one group: 100).
func (s *Server) Weights(ruleArn string) map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.weights[ruleArn]; ok {
		out := map[string]int{}
		for k, v := range w {
			out[k] = v
		}
		return out
	}
	if tg, ok := s.rules[ruleArn]; ok {
		return map[string]int{tg: 100}
	}
	return nil
}

// Forwards returns the target group a listener or rule forwards to.
func (s *Server) Forwards(arn string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if tg, ok := s.rules[arn]; ok {
		return tg
	}
	return s.listeners[arn]
}

const elbNS = "http://elasticloadbalancing.amazonaws.com/doc/2015-12-01/"

type elbAction struct {
	Type           string            `xml:"Type"`
	TargetGroupArn string            `xml:"TargetGroupArn,omitempty"`
	Order          int               `xml:"Order"`
	ForwardConfig  *elbForwardConfig `xml:"ForwardConfig,omitempty"`
}

type elbForwardConfig struct {
	TargetGroups []elbTargetGroupTuple `xml:"TargetGroups>member"`
}

type elbTargetGroupTuple struct {
	TargetGroupArn string `xml:"TargetGroupArn"`
	Weight         int    `xml:"Weight"`
}

// ruleActions are a rule's forward action: to its target group, or weighted.
func (s *Server) ruleActions(arn string) []elbAction {
	w, ok := s.weights[arn]
	if !ok {
		return []elbAction{{Type: "forward", TargetGroupArn: s.rules[arn], Order: 1}}
	}
	fc := &elbForwardConfig{}
	for tg, weight := range w {
		fc.TargetGroups = append(fc.TargetGroups, elbTargetGroupTuple{TargetGroupArn: tg, Weight: weight})
	}
	sort.Slice(fc.TargetGroups, func(i, j int) bool { return fc.TargetGroups[i].TargetGroupArn < fc.TargetGroups[j].TargetGroupArn })
	return []elbAction{{Type: "forward", Order: 1, ForwardConfig: fc}}
}

type elbRule struct {
	RuleArn   string      `xml:"RuleArn"`
	Priority  string      `xml:"Priority"`
	IsDefault bool        `xml:"IsDefault"`
	Actions   []elbAction `xml:"Actions>member"`
}

type elbListener struct {
	ListenerArn     string      `xml:"ListenerArn"`
	Port            int         `xml:"Port"`
	Protocol        string      `xml:"Protocol"`
	DefaultActions  []elbAction `xml:"DefaultActions>member"`
	LoadBalancerArn string      `xml:"LoadBalancerArn"`
}

func (s *Server) elb(w http.ResponseWriter, key string, form url.Values) {
	action := form.Get("Action")
	params := map[string]string{}
	for k := range form {
		params[k] = form.Get(k)
	}
	s.record(Call{Service: "elasticloadbalancing", Action: action, AccessKeyID: key, Params: params})
	s.mu.Lock()
	defer s.mu.Unlock()
	forward := func(tg string) []elbAction { return []elbAction{{Type: "forward", TargetGroupArn: tg, Order: 1}} }
	type rulesResult struct {
		Rules []elbRule `xml:"Rules>member"`
	}
	switch action {
	case "DescribeRules":
		var out rulesResult
		for i := 1; form.Get(fmt.Sprintf("RuleArns.member.%d", i)) != ""; i++ {
			arn := form.Get(fmt.Sprintf("RuleArns.member.%d", i))
			if _, ok := s.rules[arn]; !ok {
				stsErr(w, http.StatusBadRequest, "RuleNotFound", "One or more rules not found")
				return
			}
			out.Rules = append(out.Rules, elbRule{RuleArn: arn, Priority: "1", Actions: s.ruleActions(arn)})
		}
		writeXML(w, http.StatusOK, struct {
			XMLName xml.Name    `xml:"DescribeRulesResponse"`
			NS      string      `xml:"xmlns,attr"`
			Result  rulesResult `xml:"DescribeRulesResult"`
		}{NS: elbNS, Result: out})
	case "ModifyRule":
		arn := form.Get("RuleArn")
		if _, ok := s.rules[arn]; !ok {
			stsErr(w, http.StatusBadRequest, "RuleNotFound", "One or more rules not found")
			return
		}
		tg := form.Get("Actions.member.1.TargetGroupArn")
		delete(s.weights, arn)
		if tg == "" {
			weights, best := map[string]int{}, -1
			for i := 1; ; i++ {
				key := fmt.Sprintf("Actions.member.1.ForwardConfig.TargetGroups.member.%d.", i)
				g := form.Get(key + "TargetGroupArn")
				if g == "" {
					break
				}
				weight := 1 // ELB's default weight
				if v := form.Get(key + "Weight"); v != "" {
					if _, err := fmt.Sscan(v, &weight); err != nil || weight < 0 || weight > 999 {
						stsErr(w, http.StatusBadRequest, "ValidationError", "Weight must be between 0 and 999")
						return
					}
				}
				weights[g] = weight
				if weight > best {
					tg, best = g, weight
				}
			}
			if len(weights) > 1 {
				s.weights[arn] = weights
			}
		}
		if tg == "" {
			stsErr(w, http.StatusBadRequest, "ValidationError", "a forward action needs a target group")
			return
		}
		s.rules[arn] = tg
		writeXML(w, http.StatusOK, struct {
			XMLName xml.Name    `xml:"ModifyRuleResponse"`
			NS      string      `xml:"xmlns,attr"`
			Result  rulesResult `xml:"ModifyRuleResult"`
		}{NS: elbNS, Result: rulesResult{Rules: []elbRule{{RuleArn: arn, Priority: "1", Actions: s.ruleActions(arn)}}}})
	case "AddTags":
		for i := 1; form.Get(fmt.Sprintf("ResourceArns.member.%d", i)) != ""; i++ {
			arn := form.Get(fmt.Sprintf("ResourceArns.member.%d", i))
			if s.elbTags[arn] == nil {
				s.elbTags[arn] = map[string]string{}
			}
			for j := 1; form.Get(fmt.Sprintf("Tags.member.%d.Key", j)) != ""; j++ {
				s.elbTags[arn][form.Get(fmt.Sprintf("Tags.member.%d.Key", j))] = form.Get(fmt.Sprintf("Tags.member.%d.Value", j))
			}
		}
		writeXML(w, http.StatusOK, struct {
			XMLName xml.Name `xml:"AddTagsResponse"`
			NS      string   `xml:"xmlns,attr"`
			Result  struct{} `xml:"AddTagsResult"`
		}{NS: elbNS})
	case "DescribeTags":
		type tag struct {
			Key   string `xml:"Key"`
			Value string `xml:"Value"`
		}
		type desc struct {
			ResourceArn string `xml:"ResourceArn"`
			Tags        []tag  `xml:"Tags>member"`
		}
		type result struct {
			TagDescriptions []desc `xml:"TagDescriptions>member"`
		}
		var out result
		for i := 1; form.Get(fmt.Sprintf("ResourceArns.member.%d", i)) != ""; i++ {
			arn := form.Get(fmt.Sprintf("ResourceArns.member.%d", i))
			d := desc{ResourceArn: arn}
			keys := make([]string, 0, len(s.elbTags[arn]))
			for k := range s.elbTags[arn] {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				d.Tags = append(d.Tags, tag{Key: k, Value: s.elbTags[arn][k]})
			}
			out.TagDescriptions = append(out.TagDescriptions, d)
		}
		writeXML(w, http.StatusOK, struct {
			XMLName xml.Name `xml:"DescribeTagsResponse"`
			NS      string   `xml:"xmlns,attr"`
			Result  result   `xml:"DescribeTagsResult"`
		}{NS: elbNS, Result: out})
	case "DescribeListeners":
		type result struct {
			Listeners []elbListener `xml:"Listeners>member"`
		}
		var out result
		for i := 1; form.Get(fmt.Sprintf("ListenerArns.member.%d", i)) != ""; i++ {
			arn := form.Get(fmt.Sprintf("ListenerArns.member.%d", i))
			tg, ok := s.listeners[arn]
			if !ok {
				stsErr(w, http.StatusBadRequest, "ListenerNotFound", "One or more listeners not found")
				return
			}
			out.Listeners = append(out.Listeners, elbListener{ListenerArn: arn, Port: 80, Protocol: "HTTP", DefaultActions: forward(tg),
				LoadBalancerArn: strings.Replace(arn, ":listener/", ":loadbalancer/", 1)})
		}
		writeXML(w, http.StatusOK, struct {
			XMLName xml.Name `xml:"DescribeListenersResponse"`
			NS      string   `xml:"xmlns,attr"`
			Result  result   `xml:"DescribeListenersResult"`
		}{NS: elbNS, Result: out})
	case "ModifyListener":
		arn := form.Get("ListenerArn")
		if _, ok := s.listeners[arn]; !ok {
			stsErr(w, http.StatusBadRequest, "ListenerNotFound", "One or more listeners not found")
			return
		}
		tg := form.Get("DefaultActions.member.1.TargetGroupArn")
		s.listeners[arn] = tg
		type result struct {
			Listeners []elbListener `xml:"Listeners>member"`
		}
		writeXML(w, http.StatusOK, struct {
			XMLName xml.Name `xml:"ModifyListenerResponse"`
			NS      string   `xml:"xmlns,attr"`
			Result  result   `xml:"ModifyListenerResult"`
		}{NS: elbNS, Result: result{Listeners: []elbListener{{ListenerArn: arn, Port: 80, Protocol: "HTTP", DefaultActions: forward(tg)}}}})
	default:
		stsErr(w, http.StatusBadRequest, "InvalidAction", "the fake does not serve Elastic Load Balancing "+action)
	}
}
