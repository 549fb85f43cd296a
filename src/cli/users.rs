//! `ridepay users create | rotate-key`: API keys are printed once, here, and
//! stored only as their SHA-256.

use clap::Subcommand;
use diesel::PgConnection;
use serde_json::json;

use crate::ids::UserId;
use crate::users::{self, Role, User};

#[derive(Debug, Subcommand)]
pub enum UsersCommand {
    /// Create a user and print its API key (shown only this once) as JSON.
    Create {
        #[arg(long)]
        email: String,
        /// `rider` (the default) or `platform`: the platform's key reads
        /// every ride and reaches the platform's routes, and makes no ride.
        #[arg(long, default_value = "rider", value_parser = role)]
        role: Role,
        /// The user's customer at Stripe (`cus_...`), whose saved card pays
        /// when a ride names no payment method.
        #[arg(long)]
        stripe_customer: Option<String>,
        /// The customer's saved card (`pm_...`), paid with when a ride names
        /// no payment method.
        #[arg(long, requires = "stripe_customer", value_parser = payment_method)]
        payment_method: Option<String>,
    },
    /// Give a user a new API key; the old one stops working at once.
    RotateKey {
        /// The user's id or email.
        #[arg(long)]
        user: String,
    },
}

pub fn run(conn: &mut PgConnection, command: UsersCommand) -> anyhow::Result<()> {
    let (user, key) = match command {
        UsersCommand::Create {
            email,
            role,
            stripe_customer,
            payment_method,
        } => match role {
            Role::Rider => {
                let card = users::SavedCard {
                    customer: stripe_customer.as_deref(),
                    payment_method: payment_method.as_deref(),
                };
                users::create(conn, &email, card)
            }
            Role::Platform if stripe_customer.is_some() => {
                anyhow::bail!("a platform user pays for no ride: it takes no card")
            }
            Role::Platform => users::create_platform(conn, &email),
        }
        .map_err(|err| match err {
            diesel::result::Error::DatabaseError(
                diesel::result::DatabaseErrorKind::UniqueViolation,
                _,
            ) => anyhow::anyhow!("a user with the email {email} exists already"),
            other => anyhow::Error::from(other).context("cannot create the user"),
        })?,
        UsersCommand::RotateKey { user } => {
            let user = find_user(conn, &user)?;
            let key = users::rotate_key(conn, user.id)?;
            (user, key)
        }
    };
    println!(
        "{}",
        json!({ "user_id": user.id, "email": user.email, "role": user.role.as_str(), "api_key": key.expose() })
    );
    Ok(())
}

/// A role, by its name.
fn role(text: &str) -> Result<Role, String> {
    Role::parse(text).ok_or_else(|| format!("{text:?} is not a role: rider or platform"))
}

/// A `pm_` id, as the API takes one.
fn payment_method(text: &str) -> Result<String, String> {
    crate::validation::is_payment_method_id(text)
        .then(|| text.to_owned())
        .ok_or_else(|| format!("{text:?} is not a payment method id (pm_...)"))
}

/// A user named by id or by email.
pub fn find_user(conn: &mut PgConnection, id_or_email: &str) -> anyhow::Result<User> {
    let found = match id_or_email.parse::<i64>() {
        Ok(id) => users::find_optional(conn, UserId(id))?,
        Err(_) => users::find_by_email(conn, id_or_email)?,
    };
    found.ok_or_else(|| anyhow::anyhow!("no user {id_or_email}"))
}
