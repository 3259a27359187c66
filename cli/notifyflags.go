package cli

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/gantry-cd/gantry/activities/notify"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/identity"
)

// notifyFlags configure how this process's worker sends notifications.
type notifyFlags struct {
	smtpHost, smtpSecurity, smtpUser, smtpPasswordRef, smtpFrom string
	smtpPort                                                    int
	smtpInsecure                                                bool
	pagerDutyURL, uiURL, identity                               string
}

func (f *notifyFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.smtpHost, "smtp-host", os.Getenv("GANTRY_SMTP_HOST"), "SMTP server for Email notifications (env GANTRY_SMTP_HOST)")
	cmd.Flags().IntVar(&f.smtpPort, "smtp-port", envInt("GANTRY_SMTP_PORT"), "SMTP port; 0 is 587, or 465 with --smtp-security tls (env GANTRY_SMTP_PORT)")
	cmd.Flags().StringVar(&f.smtpSecurity, "smtp-security", envOr("GANTRY_SMTP_SECURITY", "starttls"), "starttls (required), tls (implicit TLS) or none (env GANTRY_SMTP_SECURITY)")
	cmd.Flags().StringVar(&f.smtpUser, "smtp-username", os.Getenv("GANTRY_SMTP_USERNAME"), "SMTP user name; empty sends without authentication (env GANTRY_SMTP_USERNAME)")
	cmd.Flags().StringVar(&f.smtpPasswordRef, "smtp-password-ref", os.Getenv("GANTRY_SMTP_PASSWORD_REF"), "id of the secret holding the SMTP password (GANTRY_SECRET_<ID>, the secrets file or the secret manager) (env GANTRY_SMTP_PASSWORD_REF)")
	cmd.Flags().StringVar(&f.smtpFrom, "smtp-from", envOr("GANTRY_SMTP_FROM", "gantry@localhost"), "sender address of Email notifications (env GANTRY_SMTP_FROM)")
	cmd.Flags().BoolVar(&f.smtpInsecure, "smtp-insecure-skip-verify", os.Getenv("GANTRY_SMTP_INSECURE_SKIP_VERIFY") == "true", "accept any certificate from the SMTP server (test servers only)")
	cmd.Flags().StringVar(&f.pagerDutyURL, "pagerduty-url", envOr("GANTRY_PAGERDUTY_URL", notify.DefaultPagerDutyURL), "PagerDuty Events API v2 endpoint (env GANTRY_PAGERDUTY_URL)")
	cmd.Flags().StringVar(&f.uiURL, "ui-url", os.Getenv("GANTRY_UI_URL"), "public URL of the Web UI that notifications link executions to (env GANTRY_UI_URL; default the UI this server serves)")
	cmd.Flags().StringVar(&f.identity, "notify-identity", os.Getenv("GANTRY_NOTIFY_IDENTITY"), "identity file notification user groups resolve through: members' e-mail addresses and groups' Slack, Teams and PagerDuty targets (default DATA_DIR/users.yaml; env GANTRY_NOTIFY_IDENTITY)")
}

// sender is the notification sender these flags describe; uiURL is the UI this process knows
// of (it may start serving one later), used when --ui-url is not set.
func (f notifyFlags) sender(dataDir string, r secrets.Resolver, uiURL func() string) notify.Sender {
	file := f.identity
	if file == "" {
		file = filepath.Join(dataDir, "users.yaml")
	}
	if f.uiURL != "" {
		uiURL = func() string { return f.uiURL }
	}
	return notify.Sender{
		Secrets:      r,
		Directory:    func() (*identity.Directory, error) { return identity.Load(file) },
		PagerDutyURL: f.pagerDutyURL,
		UIURL:        uiURL,
		SMTP: notify.SMTP{Host: f.smtpHost, Port: f.smtpPort, Security: f.smtpSecurity, Username: f.smtpUser,
			PasswordRef: f.smtpPasswordRef, From: f.smtpFrom, InsecureSkipVerify: f.smtpInsecure},
	}
}
