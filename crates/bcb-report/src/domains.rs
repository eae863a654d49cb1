//! Library -> domain, the seven upstream analysis domains.
//!
//! Derived table: `bigcodebench/domains/lib2domain.json` from the shared reference data (upstream
//! BigCodeBench analysis, Apache-2.0), 155 libraries. `task2domain.json` beside it is exactly
//! `[lib2domain[l] for l in task.libs]` for all 1,140 tasks of v0.1.4 (checked when the table was
//! made), so task domains are derived from the dataset's `libs` and only this table is embedded:
//! the binary then needs no data file at run time.

use serde::Serialize;

/// One of the upstream analysis domains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Domain {
    Computation,
    Cryptography,
    General,
    Network,
    System,
    Time,
    Visualization,
}

impl Domain {
    pub const ALL: [Domain; 7] = [
        Domain::Computation,
        Domain::Cryptography,
        Domain::General,
        Domain::Network,
        Domain::System,
        Domain::Time,
        Domain::Visualization,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Domain::Computation => "Computation",
            Domain::Cryptography => "Cryptography",
            Domain::General => "General",
            Domain::Network => "Network",
            Domain::System => "System",
            Domain::Time => "Time",
            Domain::Visualization => "Visualization",
        }
    }

    /// The domain of one library (`None` for a library outside the table).
    pub fn of_library(lib: &str) -> Option<Domain> {
        LIB_DOMAINS
            .binary_search_by(|(l, _)| (*l).cmp(lib))
            .ok()
            .map(|i| LIB_DOMAINS[i].1)
    }
}

/// Sorted by library name (binary search).
const LIB_DOMAINS: &[(&str, Domain)] = &[
    ("Crypto", Domain::Cryptography),
    ("IPython", Domain::Computation),
    ("Levenshtein", Domain::Computation),
    ("PIL", Domain::Visualization),
    ("argparse", Domain::General),
    ("array", Domain::General),
    ("aspose", Domain::System),
    ("ast", Domain::General),
    ("base64", Domain::Cryptography),
    ("binascii", Domain::Cryptography),
    ("bisect", Domain::General),
    ("blake3", Domain::Cryptography),
    ("bs4", Domain::Network),
    ("builtins", Domain::General),
    ("calendar", Domain::Time),
    ("cgi", Domain::Network),
    ("chardet", Domain::Network),
    ("cmath", Domain::Computation),
    ("codecs", Domain::Cryptography),
    ("collections", Domain::General),
    ("configparser", Domain::System),
    ("copy", Domain::General),
    ("cryptography", Domain::Cryptography),
    ("csv", Domain::System),
    ("ctypes", Domain::System),
    ("cv2", Domain::Computation),
    ("datetime", Domain::Time),
    ("dateutil", Domain::Time),
    ("decimal", Domain::General),
    ("difflib", Domain::General),
    ("django", Domain::Network),
    ("docx", Domain::System),
    ("docxtpl", Domain::System),
    ("email", Domain::Network),
    ("enum", Domain::General),
    ("errno", Domain::System),
    ("faker", Domain::General),
    ("filecmp", Domain::System),
    ("flask", Domain::Network),
    ("flask_login", Domain::Network),
    ("flask_mail", Domain::Network),
    ("flask_restful", Domain::Network),
    ("flask_wtf", Domain::Network),
    ("fnmatch", Domain::General),
    ("folium", Domain::Visualization),
    ("ftplib", Domain::Network),
    ("functools", Domain::General),
    ("gensim", Domain::Computation),
    ("geopandas", Domain::Computation),
    ("geopy", Domain::Network),
    ("getpass", Domain::System),
    ("glob", Domain::System),
    ("gzip", Domain::System),
    ("hashlib", Domain::Cryptography),
    ("heapq", Domain::General),
    ("hmac", Domain::Cryptography),
    ("holidays", Domain::Time),
    ("html", Domain::Network),
    ("http", Domain::Network),
    ("imp", Domain::System),
    ("importlib", Domain::General),
    ("inspect", Domain::General),
    ("io", Domain::System),
    ("ipaddress", Domain::Network),
    ("itertools", Domain::General),
    ("json", Domain::System),
    ("keras", Domain::Computation),
    ("librosa", Domain::Computation),
    ("locale", Domain::System),
    ("logging", Domain::System),
    ("lxml", Domain::Network),
    ("math", Domain::Computation),
    ("matplotlib", Domain::Visualization),
    ("mechanize", Domain::Network),
    ("mimetypes", Domain::Network),
    ("mpl_toolkits", Domain::Visualization),
    ("multidict", Domain::General),
    ("multiprocessing", Domain::System),
    ("natsort", Domain::General),
    ("nltk", Domain::Computation),
    ("numpy", Domain::Computation),
    ("obspy", Domain::Computation),
    ("openpyxl", Domain::System),
    ("operator", Domain::General),
    ("os", Domain::System),
    ("pandas", Domain::Computation),
    ("pathlib", Domain::System),
    ("pickle", Domain::System),
    ("pkgutil", Domain::General),
    ("platform", Domain::System),
    ("pprint", Domain::General),
    ("prettytable", Domain::General),
    ("psutil", Domain::System),
    ("pyquery", Domain::Network),
    ("pytesseract", Domain::Computation),
    ("python_http_client", Domain::Network),
    ("pytz", Domain::Time),
    ("queue", Domain::General),
    ("random", Domain::General),
    ("re", Domain::General),
    ("regex", Domain::General),
    ("requests", Domain::Network),
    ("rsa", Domain::Cryptography),
    ("scipy", Domain::Computation),
    ("seaborn", Domain::Visualization),
    ("secrets", Domain::Cryptography),
    ("select", Domain::System),
    ("selenium", Domain::Network),
    ("sendgrid", Domain::Network),
    ("shapely", Domain::Computation),
    ("shlex", Domain::System),
    ("shutil", Domain::System),
    ("signal", Domain::System),
    ("skimage", Domain::Computation),
    ("sklearn", Domain::Computation),
    ("smtplib", Domain::Network),
    ("socket", Domain::Network),
    ("soundfile", Domain::Computation),
    ("sqlalchemy", Domain::System),
    ("sqlite3", Domain::System),
    ("ssl", Domain::Network),
    ("statistics", Domain::Computation),
    ("statsmodels", Domain::Computation),
    ("string", Domain::General),
    ("struct", Domain::System),
    ("subprocess", Domain::System),
    ("sympy", Domain::Computation),
    ("sys", Domain::System),
    ("tarfile", Domain::System),
    ("tensorflow", Domain::Computation),
    ("textblob", Domain::Computation),
    ("texttable", Domain::General),
    ("textwrap", Domain::General),
    ("threading", Domain::System),
    ("time", Domain::Time),
    ("torch", Domain::Computation),
    ("turtle", Domain::Visualization),
    ("types", Domain::General),
    ("typing", Domain::General),
    ("unicodedata", Domain::General),
    ("urllib", Domain::Network),
    ("uuid", Domain::General),
    ("warnings", Domain::General),
    ("werkzeug", Domain::Network),
    ("wikipedia", Domain::Network),
    ("wordcloud", Domain::Visualization),
    ("wordninja", Domain::Computation),
    ("wtforms", Domain::Network),
    ("xlrd", Domain::System),
    ("xlwt", Domain::System),
    ("xml", Domain::Network),
    ("xmltodict", Domain::Network),
    ("yaml", Domain::System),
    ("zipfile", Domain::System),
    ("zlib", Domain::System),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_complete() {
        assert!(LIB_DOMAINS.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(LIB_DOMAINS.len(), 155);
        for d in Domain::ALL {
            assert!(
                LIB_DOMAINS.iter().any(|(_, x)| *x == d),
                "{d:?} has a library"
            );
        }
        assert_eq!(
            Domain::of_library("matplotlib"),
            Some(Domain::Visualization)
        );
        assert_eq!(Domain::of_library("Crypto"), Some(Domain::Cryptography));
        assert_eq!(Domain::of_library("requests"), Some(Domain::Network));
        assert_eq!(Domain::of_library("no-such-lib"), None);
    }
}
