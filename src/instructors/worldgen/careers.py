"""
What people of the generated world do: occupations, fields of study and the
kinds of school where they studied (a school always names its city).
"""

OCCUPATIONS = """painter; sculptor; composer; conductor; pianist; violinist;
singer; opera singer; actor; stage designer; film director; screenwriter;
novelist; poet; playwright; journalist; photographer; architect; engineer;
civil engineer; chemist; physicist; mathematician; astronomer; botanist;
geologist; physician; surgeon; economist; historian; philosopher;
archaeologist; lawyer; judge; diplomat; politician; trade unionist; banker;
industrialist; publisher; bishop; missionary; footballer; cricketer;
cyclist; rower; swimmer; sprinter; boxer; chess player; tennis player;
ice hockey player; racing driver; mountaineer; naval officer; army officer;
aviator; explorer; cartographer; illustrator; cartoonist; fashion designer;
chef; translator; linguist; librarian; museum curator; radio presenter;
television host; comedian; dancer; choreographer; jazz saxophonist;
guitarist; songwriter; record producer; entrepreneur; activist;
trade negotiator; schoolteacher; magistrate""".replace("\n", " ")

FIELDS = """law; medicine; physics; chemistry; mathematics; music; painting;
architecture; history; philosophy; economics; engineering; theology;
literature; languages; drama; journalism; agriculture""".replace("\n", " ")

UNIVERSITY = "the University of {city}"
SCHOOLS_BY_FIELD = {
    "music": "the {city} Conservatory",
    "painting": "the Academy of Fine Arts in {city}",
    "architecture": "the Academy of Fine Arts in {city}",
    "engineering": "the polytechnic institute of {city}",
    "medicine": "the medical school in {city}",
    "economics": "the {city} School of Economics",
    "theology": "a seminary in {city}",
    "drama": "the drama school of {city}",
    "agriculture": "an agricultural college near {city}",
}

OCCUPATION_LIST = [item.strip() for item in OCCUPATIONS.split(";")]
FIELD_LIST = [item.strip() for item in FIELDS.split(";")]


def school_for(field, rng):
    """Where one studies the field: its own kind of school or, often, a university."""
    pattern = SCHOOLS_BY_FIELD.get(field, UNIVERSITY)
    return pattern if rng.random() < 0.6 else UNIVERSITY


def with_article(words):
    """Puts "a" or "an" before the words, by their first letter."""
    return ("an " if words[0] in "aeiouAEIO" else "a ") + words
