package notify

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/http"
	"net/smtp"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/identity"
)

// DefaultPagerDutyURL is the PagerDuty Events API v2 endpoint.
const DefaultPagerDutyURL = "https://events.pagerduty.com/v2/enqueue"

// MaxRetryAfter is the longest Retry-After a receiver may ask for that is honoured (spec 20.5).
const MaxRetryAfter = 5 * time.Minute

// Sender sends deliveries.
type Sender struct {
	Secrets secrets.Resolver
	// Directory returns the user directory that user groups resolve through (nil: no groups).
	Directory func() (*identity.Directory, error)
	SMTP      SMTP
	// PagerDutyURL is the Events API v2 endpoint ("" is DefaultPagerDutyURL).
	PagerDutyURL string
	// UIURL returns the Web UI messages link to ("" or nil: no links).
	UIURL  func() string
	Client *http.Client // nil: a client without a timeout of its own (the context bounds it)
}

// SMTP is the mail server e-mail notifications go through.
type SMTP struct {
	Host string
	Port int
	// Security is starttls (the default: STARTTLS required), tls (implicit TLS, usually port
	// 465) or none (plain text, for a relay on the same host).
	Security    string
	Username    string
	PasswordRef string // secret identifier of the password
	From        string
	// InsecureSkipVerify accepts any server certificate (test servers only).
	InsecureSkipVerify bool
}

// Error is a failed send. Retryable ones may succeed later (spec 20.5.4).
type Error struct {
	Retryable  bool
	Code       int
	RetryAfter time.Duration
	Msg        string // masked
}

func (e *Error) Error() string { return e.Msg }

func permanent(code int, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// Send sends one delivery once.
func (s *Sender) Send(ctx context.Context, d contract.Delivery) (contract.DeliveryResult, error) {
	if d.Unresolved != "" {
		return contract.DeliveryResult{}, permanent(0, "%s", d.Unresolved)
	}
	mask := &secrets.Masker{}
	res, err := s.send(ctx, d, mask)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			e = &Error{Retryable: true, Msg: err.Error()}
		}
		e.Msg = contract.MaskRefs(mask.Apply(e.Msg))
		return res, e
	}
	res.Detail = mask.Apply(res.Detail)
	return res, nil
}

func (s *Sender) send(ctx context.Context, d contract.Delivery, mask *secrets.Masker) (contract.DeliveryResult, error) {
	links := LinksFor(s.uiURL(), d.Event)
	if d.Channel == "Email" {
		return s.sendMail(ctx, d, links, mask)
	}
	target := d.URL
	routing := d.RoutingKey
	if len(d.Groups) == 1 {
		var err error
		if target, routing, err = s.groupTarget(d.Channel, d.Groups[0]); err != nil {
			return contract.DeliveryResult{}, err
		}
	}
	var body any
	headers := map[string]string{}
	switch d.Channel {
	case "Webhook":
		body = WebhookPayload(d.Event, links)
		headers["Idempotency-Key"] = d.Key
	case "Slack":
		body = SlackMessage(d.Event, links)
	case "MsTeams":
		body = TeamsMessage(d.Event, links)
	case "PagerDuty":
		key, err := secrets.Expand(ctx, s.Secrets, mask, routing)
		if err != nil {
			return contract.DeliveryResult{}, permanent(0, "PagerDuty integration key: %v", err)
		}
		target = s.PagerDutyURL
		if target == "" {
			target = DefaultPagerDutyURL
		}
		body = PagerDutyEvent(d.Event, links, key, d.Key)
	case "Datadog":
		key, err := secrets.Expand(ctx, s.Secrets, mask, routing)
		if err != nil {
			return contract.DeliveryResult{}, permanent(0, "Datadog API key: %v", err)
		}
		headers["DD-API-KEY"] = key
		headers["Idempotency-Key"] = d.Key
		body = DatadogEvent(d.Event, links)
	default:
		return contract.DeliveryResult{}, permanent(0, "unknown channel type %q", d.Channel)
	}
	for _, k := range slices.Sorted(maps.Keys(d.Headers)) {
		v, err := secrets.Expand(ctx, s.Secrets, mask, d.Headers[k])
		if err != nil {
			return contract.DeliveryResult{}, permanent(0, "header %s: %v", k, err)
		}
		headers[k] = v
	}
	u, err := secrets.Expand(ctx, s.Secrets, mask, target)
	if err != nil {
		return contract.DeliveryResult{}, permanent(0, "url: %v", err)
	}
	return s.post(ctx, u, headers, mustJSON(body), mask)
}

func (s *Sender) uiURL() string {
	if s.UIURL == nil {
		return ""
	}
	return s.UIURL()
}

// groupTarget is where a group's messages of a channel go.
func (s *Sender) groupTarget(channel, ref string) (url, key string, err error) {
	g, err := s.group(ref)
	if err != nil {
		return "", "", err
	}
	switch channel {
	case "Slack":
		url = g.SlackWebhookURL
	case "MsTeams":
		url = g.MsTeamsWebhookURL
	case "PagerDuty":
		key = g.PagerDutyKey
	}
	if url == "" && key == "" {
		field := map[string]string{"Slack": "slackWebhookUrl", "MsTeams": "msTeamsWebhookUrl", "PagerDuty": "pagerDutyKey"}[channel]
		return "", "", permanent(0, "user group %s has no %s in the identity file", ref, field)
	}
	return url, key, nil
}

func (s *Sender) group(ref string) (identity.Group, error) {
	dir, err := s.directory()
	if err != nil {
		return identity.Group{}, err
	}
	g, ok := dir.Group(ref)
	if !ok {
		return identity.Group{}, permanent(0, "user group %s is not in the identity file", ref)
	}
	return g, nil
}

func (s *Sender) directory() (*identity.Directory, error) {
	if s.Directory == nil {
		return &identity.Directory{}, nil
	}
	dir, err := s.Directory()
	if err != nil {
		return nil, &Error{Retryable: true, Msg: "read the identity file for user groups: " + err.Error()}
	}
	return dir, nil
}

// post sends a JSON body and classifies the answer: 2xx delivered; 408, 425, 429 and 5xx (or no
// answer) retryable; any other status permanent.
func (s *Sender) post(ctx context.Context, url string, headers map[string]string, body []byte, mask *secrets.Masker) (contract.DeliveryResult, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil || req.URL.Host == "" || (req.URL.Scheme != "http" && req.URL.Scheme != "https") {
		return contract.DeliveryResult{}, permanent(0, "%q is not an absolute http(s) URL", mask.Apply(url))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Gantry-Notifications/1")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	c := s.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return contract.DeliveryResult{}, &Error{Retryable: true, Msg: fmt.Sprintf("POST %s: %v", MaskURL(mask.Apply(url)), err)}
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
	answer := strings.TrimSpace(string(text))
	if resp.StatusCode/100 == 2 {
		return contract.DeliveryResult{Code: resp.StatusCode, Detail: clip(answer, 200)}, nil
	}
	e := &Error{Code: resp.StatusCode, Msg: fmt.Sprintf("POST %s: HTTP %d: %s", MaskURL(mask.Apply(url)), resp.StatusCode, clip(answer, 500))}
	switch c := resp.StatusCode; {
	case c == 408 || c == 425 || c == 429 || c >= 500:
		e.Retryable = true
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs >= 0 && time.Duration(secs)*time.Second <= MaxRetryAfter {
			e.RetryAfter = time.Duration(secs) * time.Second
		}
	}
	return contract.DeliveryResult{}, e
}

// MaskURL hides a URL's query values: webhook URLs often carry their token there.
func MaskURL(u string) string {
	base, query, ok := strings.Cut(u, "?")
	if !ok {
		return u
	}
	parts := strings.Split(query, "&")
	for i, p := range parts {
		if k, _, ok := strings.Cut(p, "="); ok {
			parts[i] = k + "=" + secrets.Mask
		}
	}
	return base + "?" + strings.Join(parts, "&")
}

// sendMail sends one message to the recipients and the members of the groups.
func (s *Sender) sendMail(ctx context.Context, d contract.Delivery, links Links, mask *secrets.Masker) (contract.DeliveryResult, error) {
	rcpt := append([]string(nil), d.Recipients...)
	var skipped []string
	if len(d.Groups) > 0 {
		dir, err := s.directory()
		if err != nil {
			return contract.DeliveryResult{}, err
		}
		for _, ref := range d.Groups {
			g, ok := dir.Group(ref)
			if !ok {
				skipped = append(skipped, ref)
				continue
			}
			rcpt = append(rcpt, dir.Emails(g.Name)...)
		}
	}
	rcpt = uniq(rcpt)
	if len(rcpt) == 0 {
		if len(skipped) > 0 {
			return contract.DeliveryResult{}, permanent(0, "no recipient: user groups %s are not in the identity file", strings.Join(skipped, ", "))
		}
		return contract.DeliveryResult{}, permanent(0, "no recipient: the recipients and the groups' members have no e-mail address")
	}
	if s.SMTP.Host == "" {
		return contract.DeliveryResult{}, permanent(0, "no SMTP server configured: start the worker with --smtp-host (and --smtp-from)")
	}
	msg := buildMail(s.SMTP.From, rcpt, d.Key, MailMessage(d.Event, links))
	if err := s.deliverSMTP(ctx, rcpt, msg, mask); err != nil {
		return contract.DeliveryResult{}, err
	}
	detail := fmt.Sprintf("sent to %d address(es)", len(rcpt))
	if len(skipped) > 0 {
		detail += "; user groups not in the identity file, not told: " + strings.Join(skipped, ", ")
	}
	return contract.DeliveryResult{Code: 250, Detail: detail}, nil
}

func uniq(list []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range list {
		if s = strings.TrimSpace(s); s != "" && !seen[strings.ToLower(s)] {
			seen[strings.ToLower(s)] = true
			out = append(out, s)
		}
	}
	return out
}

// MessageID is the stable Message-ID of a delivery: every attempt sends the same one, so mail
// systems that deduplicate by it keep one copy.
func MessageID(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "<" + hex.EncodeToString(sum[:16]) + "@notifications.gantry>"
}

// buildMail writes a multipart/alternative message with a plain-text and an HTML part.
func buildMail(from string, to []string, key string, m Mail) []byte {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\nSubject: %s\r\nMessage-ID: %s\r\nDate: %s\r\nMIME-Version: 1.0\r\nX-Gantry-Idempotency-Key: %s\r\nContent-Type: multipart/alternative; boundary=%q\r\n\r\n",
		from, strings.Join(to, ", "), mimeHeader(m.Subject), MessageID(key), time.Now().UTC().Format(time.RFC1123Z), key, w.Boundary())
	for _, p := range []struct{ typ, body string }{{"text/plain", m.Text}, {"text/html", m.HTML}} {
		pw, _ := w.CreatePart(textproto.MIMEHeader{"Content-Type": {p.typ + "; charset=utf-8"}, "Content-Transfer-Encoding": {"quoted-printable"}})
		qp := quotedprintable.NewWriter(pw)
		_, _ = qp.Write([]byte(p.body))
		_ = qp.Close()
	}
	_ = w.Close()
	return b.Bytes()
}

func mimeHeader(s string) string {
	for _, r := range s {
		if r > 126 {
			return "=?utf-8?q?" + strings.ReplaceAll(strings.ReplaceAll(quotedprintableString(s), " ", "_"), "?", "=3F") + "?="
		}
	}
	return s
}

func quotedprintableString(s string) string {
	var b bytes.Buffer
	w := quotedprintable.NewWriter(&b)
	_, _ = w.Write([]byte(s))
	_ = w.Close()
	return strings.ReplaceAll(b.String(), "=\r\n", "")
}

// deliverSMTP hands a message to the SMTP server. 5xx answers are permanent rejections;
// connection problems and 4xx answers are retried.
func (s *Sender) deliverSMTP(ctx context.Context, rcpt []string, msg []byte, mask *secrets.Masker) error {
	cfg := s.SMTP
	port := cfg.Port
	if port == 0 {
		port = map[string]int{"tls": 465, "none": 25}[cfg.Security]
		if port == 0 {
			port = 587
		}
	}
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(port))
	tlsConf := &tls.Config{ServerName: cfg.Host, InsecureSkipVerify: cfg.InsecureSkipVerify} //nolint:gosec // only when asked for test servers
	dialer := &net.Dialer{}
	var conn net.Conn
	var err error
	if cfg.Security == "tls" {
		conn, err = (&tls.Dialer{NetDialer: dialer, Config: tlsConf}).DialContext(ctx, "tcp", addr)
	} else {
		conn, err = dialer.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return &Error{Retryable: true, Msg: fmt.Sprintf("connect to SMTP server %s: %v", addr, err)}
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	c, err := smtp.NewClient(conn, cfg.Host)
	if err != nil {
		conn.Close()
		return smtpError(addr, "greeting", err)
	}
	defer c.Close()
	if err := c.Hello("gantry"); err != nil {
		return smtpError(addr, "EHLO", err)
	}
	if cfg.Security == "" || cfg.Security == "starttls" {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			return permanent(0, "SMTP server %s does not offer STARTTLS; use --smtp-security tls or none", addr)
		}
		if err := c.StartTLS(tlsConf); err != nil {
			return smtpError(addr, "STARTTLS", err)
		}
	}
	if cfg.Username != "" {
		password, err := secrets.Expand(ctx, s.Secrets, mask, fmt.Sprintf(`<+secrets.getValue(%q)>`, cfg.PasswordRef))
		if cfg.PasswordRef == "" {
			password, err = "", nil
		}
		if err != nil {
			return &Error{Retryable: true, Msg: "SMTP password: " + err.Error()}
		}
		if err := c.Auth(smtp.PlainAuth("", cfg.Username, password, cfg.Host)); err != nil {
			return smtpError(addr, "AUTH", err)
		}
	}
	if err := c.Mail(addrOnly(cfg.From)); err != nil {
		return smtpError(addr, "MAIL FROM", err)
	}
	for _, r := range rcpt {
		if err := c.Rcpt(addrOnly(r)); err != nil {
			return smtpError(addr, "RCPT TO "+r, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return smtpError(addr, "DATA", err)
	}
	if _, err := w.Write(msg); err != nil {
		return smtpError(addr, "DATA", err)
	}
	if err := w.Close(); err != nil {
		return smtpError(addr, "end of DATA", err)
	}
	_ = c.Quit()
	return nil
}

// addrOnly is the address of "Name <addr>".
func addrOnly(s string) string {
	if i := strings.LastIndexByte(s, '<'); i >= 0 && strings.HasSuffix(s, ">") {
		return s[i+1 : len(s)-1]
	}
	return s
}

func smtpError(addr, stage string, err error) error {
	var tp *textproto.Error
	if errors.As(err, &tp) {
		return &Error{Retryable: tp.Code < 500, Code: tp.Code, Msg: fmt.Sprintf("SMTP server %s rejected %s: %d %s", addr, stage, tp.Code, tp.Msg)}
	}
	// net/smtp refuses to send a password over an unencrypted connection to another host.
	return &Error{Retryable: stage != "AUTH", Msg: fmt.Sprintf("SMTP server %s, %s: %v", addr, stage, err)}
}
