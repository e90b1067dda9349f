//! Who is talking: one bearer token per user the server knows, written into a kubeconfig with
//! one context per user (the current context the administrator's, as a new kind cluster's is).
//! Tokens are drawn from the seed, so a served scenario's kubeconfig is the same every time.

use std::sync::Arc;

use sim_core::api::User;
use sim_core::rng::ComponentRng;

/// A user of the served cluster and its token.
#[derive(Clone, Debug)]
pub struct Client {
    /// The identity faults and the record name: the kubeconfig user's name.
    pub identity: String,
    pub user: Arc<User>,
    pub token: String,
}

#[derive(Clone, Debug, Default)]
pub struct Clients {
    clients: Vec<Client>,
}

/// The administrator's identity (the kubeconfig's current context).
pub const ADMIN: &str = "admin";

impl Clients {
    /// The administrator, then one ServiceAccount user per `(namespace, name)`, then any other
    /// named identities (a scenario's electors that are to be real processes).
    pub fn new(seed: u64, service_accounts: &[(String, String)], others: &[String]) -> Clients {
        let mut clients = Vec::new();
        let token = |who: &str| {
            let mut rng = ComponentRng::new(seed, &format!("serve/token/{who}"));
            format!("leasesim-{:016x}{:016x}", rng.next_u64(), rng.next_u64())
        };
        clients.push(Client { identity: ADMIN.into(), user: Arc::new(User::admin()), token: token(ADMIN) });
        for (ns, name) in service_accounts {
            let identity = format!("system:serviceaccount:{ns}:{name}");
            if clients.iter().any(|c: &Client| c.identity == identity) {
                continue;
            }
            clients.push(Client { user: Arc::new(User::service_account(ns, name)), token: token(&identity), identity });
        }
        for name in others {
            if clients.iter().any(|c: &Client| &c.identity == name) {
                continue;
            }
            clients.push(Client { identity: name.clone(), user: Arc::new(User::named(name)), token: token(name) });
        }
        Clients { clients }
    }

    pub fn by_token(&self, token: &str) -> Option<&Client> {
        // Tokens are compared whole; a run of a few dozen users needs no index.
        self.clients.iter().find(|c| c.token == token)
    }

    pub fn admin(&self) -> &Client {
        &self.clients[0]
    }

    pub fn all(&self) -> &[Client] {
        &self.clients
    }

    /// A kubeconfig naming every user, its current context the administrator.
    /// `ca`: the server's CA certificate, PEM in base64 (`certificate-authority-data`).
    pub fn kubeconfig(&self, server: &str, ca: &str) -> String {
        let context_name = |c: &Client| {
            if c.identity == ADMIN { "leasesim".to_string() } else { format!("leasesim-{}", short(&c.identity)) }
        };
        let mut out = String::from("apiVersion: v1\nkind: Config\npreferences: {}\n");
        out.push_str(&format!(
            "clusters:\n- name: leasesim\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\n"
        ));
        out.push_str("contexts:\n");
        for c in &self.clients {
            out.push_str(&format!(
                "- name: {}\n  context:\n    cluster: leasesim\n    user: {}\n",
                context_name(c),
                quote(&c.identity)
            ));
        }
        out.push_str("current-context: leasesim\nusers:\n");
        for c in &self.clients {
            out.push_str(&format!("- name: {}\n  user:\n    token: {}\n", quote(&c.identity), c.token));
        }
        out
    }
}

/// `system:serviceaccount:ns:name` → `ns-name` for a context name.
fn short(identity: &str) -> String {
    identity
        .strip_prefix("system:serviceaccount:")
        .map(|rest| rest.replace(':', "-"))
        .unwrap_or_else(|| identity.to_string())
}

/// A YAML scalar that stays a string (identities hold `:`).
fn quote(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_per_user_stable_and_found_back() {
        let sa = vec![("op-leader".to_string(), "widget-operator".to_string())];
        let a = Clients::new(1, &sa, &["A".into()]);
        let b = Clients::new(1, &sa, &["A".into()]);
        assert_eq!(a.all().len(), 3);
        for (x, y) in a.all().iter().zip(b.all()) {
            assert_eq!(x.token, y.token);
        }
        let sa_token = &a.all()[1].token;
        assert_eq!(a.by_token(sa_token).unwrap().identity, "system:serviceaccount:op-leader:widget-operator");
        assert!(a.by_token("nope").is_none());
        let config = a.kubeconfig("https://127.0.0.1:1", "Q0E=");
        assert!(config.contains("current-context: leasesim\n"));
        assert!(config.contains("- name: leasesim-op-leader-widget-operator\n"));
    }
}
