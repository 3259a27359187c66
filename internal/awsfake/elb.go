package awsfake

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// The Elastic Load Balancing v2 part of the fake speaks the query protocol (XML answers) for
// the listeners and listener rules blue-green deployments swap: each forwards to one target
// group, and ModifyRule and ModifyListener point it at another.

// AddListener makes a listener forwarding to targetGroup, with one rule (ruleArn, "" for none)
// forwarding to the same group.
func (s *Server) AddListener(listenerArn, ruleArn, targetGroup string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listeners[listenerArn] = targetGroup
	if ruleArn != "" {
		s.rules[ruleArn] = targetGroup
	}
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
	Type           string `xml:"Type"`
	TargetGroupArn string `xml:"TargetGroupArn"`
	Order          int    `xml:"Order"`
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
			tg, ok := s.rules[arn]
			if !ok {
				stsErr(w, http.StatusBadRequest, "RuleNotFound", "One or more rules not found")
				return
			}
			out.Rules = append(out.Rules, elbRule{RuleArn: arn, Priority: "1", Actions: forward(tg)})
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
		if tg == "" {
			tg = form.Get("Actions.member.1.ForwardConfig.TargetGroups.member.1.TargetGroupArn")
		}
		s.rules[arn] = tg
		writeXML(w, http.StatusOK, struct {
			XMLName xml.Name    `xml:"ModifyRuleResponse"`
			NS      string      `xml:"xmlns,attr"`
			Result  rulesResult `xml:"ModifyRuleResult"`
		}{NS: elbNS, Result: rulesResult{Rules: []elbRule{{RuleArn: arn, Priority: "1", Actions: forward(tg)}}}})
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
